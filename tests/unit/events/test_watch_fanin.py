"""`watch` draws a join step's progress against what it needs, a reduce step's batches, and the
references in a job's result by size, never their content. Pure."""

from __future__ import annotations

from workflow_manager.payloads.view import human_size, ref_lines
from workflow_manager.watch import _event_line, render_job_view

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
REF = {"$ref": f"wm://main/j1/{DIGEST}", "sha256": DIGEST, "size": 100_000_000}


def _job(status: str, step: dict, result: dict | None = None) -> dict:
    job = {"uuid": "j1", "workflow": "w", "status": status, "completed": [], "running": []}
    job["running" if status == "running" else "completed"].append(
        {"name": "ask", "startTime": "2026-01-01T00:00:02.000Z", "tasks": ["c"] * 4, **step}
    )
    if result is not None:
        job["result"] = result
    return job


def test_a_join_step_fills_its_bar_up_to_what_it_needs():
    join = {"policy": "min_success 3", "needed": 3, "succeeded": 1, "failed": 1, "left": 2}
    (_, line) = render_job_view(_job("running", {"join": {**join, "then": "cancel"}}))
    assert "[########----------------] 1/3 needed" in line
    assert "join min_success 3: 1 failed, 2 left" in line
    met = {**join, "succeeded": 3, "left": 0, "then": "finish", "met": True}
    (_, line) = render_job_view(_job("completed", {"join": met}))
    assert "3/3 needed" in line and "met (the rest left to finish)" in line


def test_a_reduce_step_says_how_many_children_and_batches_were_reduced():
    reduce = {"step": "total", "batch": 100, "batches": 3, "reduced": 250}
    (_, line) = render_job_view(_job("running", {"reduce": reduce}))
    assert "reduced 250 in 3 batches" in line
    (_, line) = render_job_view(_job("running", {"reduce": {**reduce, "batches": 1}}))
    assert "in 1 batch" in line and "batches" not in line


def test_references_in_the_result_show_by_size_and_where_they_are():
    result = {"pages": 412, "report": REF, "parts": [{"file": REF}]}
    lines = render_job_view(_job("completed", {}, result))
    assert lines[-3].startswith("  result (stored values")
    assert lines[-2] == "    report: stored value · 100.0 MB · sha256 9f86d081…"
    assert lines[-1] == "    parts[0].file: stored value · 100.0 MB · sha256 9f86d081…"
    assert not any(DIGEST in line for line in lines)


def test_many_references_are_cut_short_and_sizes_read_in_units():
    assert len(ref_lines({"items": [REF] * 9}, limit=5)) == 6
    assert ref_lines({"items": [REF] * 9}, limit=5)[-1] == "  … and 4 more stored values"
    assert [human_size(n) for n in (0, 999, 1000, 1_500_000, 10**13)] == [
        "0 B", "999 B", "1.0 kB", "1.5 MB", "10.0 TB",
    ]  # fmt: skip


def test_an_event_line_tells_a_task_steps_totals():
    event = {
        "type": "step.completed", "step": "ask", "attempt": 0, "at": 0.0,
        "join": {"policy": "first 2", "needed": 2, "succeeded": 2, "failed": 0, "left": 3},
        "reduce": {"batches": 1, "reduced": 2},
    }  # fmt: skip
    line = _event_line(event)
    assert line.endswith(
        "step.completed ask  join first 2: 2 of 2 needed succeeded, 0 failed, 3 left"
        "  reduced 2 in 1 batch(es)"
    )
