"""Engine traffic to journal rows and back: replaying the rows rebuilds the same state."""

from __future__ import annotations

import json

from manager.engine import EngineState, JobSubmitted, StepReplied, apply
from manager.journal.entries import record, to_event
from manager.journal.records import REPLAYED_KINDS, EventKind
from tests.unit.engine.helpers import JOB, cid, workflows

FLOW = """
workflows:
  - name: w
    steps:
      - name: split
      - {name: fan, task: t, depends: [split]}
      - {name: done, depends: [fan], queue: finish}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""


def _run_live():
    """Run a job live, recording every batch as the orchestrator does."""
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    rows, outbound = [], []

    def feed(event):
        _, commands = apply(state, event)
        batch, out = record(state, event, commands, "wm")
        rows.extend(batch.events)
        outbound.extend(out)
        return commands

    feed(
        JobSubmitted(JOB, "w", {"p": 1}, 1.0, reply_to="answers", definition=defs["w"].content_hash)
    )
    feed(StepReplied(cid(JOB, "split"), b'{"items": ["a", "b"]}', 2.0, attempt=1))
    children = state.jobs[JOB].steps["fan"].children
    feed(StepReplied(cid(children[1], "work"), b'{"item": 2}', 3.0))
    feed(StepReplied(cid(children[1], "work"), b'{"dup": 1}', 3.5))  # ignored duplicate
    feed(StepReplied("junk", b"{}", 3.6))  # stray
    feed(StepReplied(cid(children[0], "work"), b'{"item": 1}', 4.0))
    return defs, state, rows, outbound


def test_replaying_the_recorded_rows_rebuilds_the_live_state():
    defs, live, rows, _ = _run_live()
    replayed = EngineState.from_workflows(defs)
    for row in rows:
        if row.kind in REPLAYED_KINDS:
            apply(replayed, to_event(row))
    assert replayed == live


def test_outbound_rows_hold_everything_needed_to_publish_again():
    _, state, _, outbound = _run_live()
    first = outbound[0]
    assert first.kind == EventKind.DISPATCHED
    assert first.msg_id == f"{JOB}:split:1"
    assert first.meta == {
        "queue": "split", "cid": f"{JOB}:split", "reply_to": "wm",
        "headers": {"x-workflow": "w", "x-attempt": 1},
    }  # fmt: skip
    assert json.loads(first.body) == {"p": 1}
    last = outbound[-1]
    assert (last.meta["queue"], last.meta["cid"], last.step) == ("finish", f"{JOB}:done", "done")
    assert json.loads(last.body) == {"items": [1, 2]}


def test_rows_carry_the_root_job_for_child_traffic_and_none_for_strays():
    _, state, rows, _ = _run_live()
    replies = [r for r in rows if r.kind == EventKind.REPLIED]
    assert all(r.root_id == JOB for r in replies if r.meta["cid"] != "junk")
    assert next(r for r in replies if r.meta["cid"] == "junk").root_id is None
    ignored = [r for r in rows if r.kind == EventKind.IGNORED]
    assert len(ignored) == 2 and all(r.meta["reason"] for r in ignored)


def test_job_rows_start_running_and_end_with_a_snapshot():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    event = JobSubmitted(JOB, "w", {}, 1.0)
    _, commands = apply(state, event)
    batch, _ = record(state, event, commands, "wm")
    assert [(j.id, j.status, j.snapshot) for j in batch.jobs] == [(JOB, "running", None)]
    event = StepReplied(cid(JOB, "split"), b"", 2.0, error="bad")
    _, commands = apply(state, event)
    batch, _ = record(state, event, commands, "wm")
    (job,) = batch.jobs
    assert job.status == "failed" and job.snapshot["status"] == "failed"
    assert job.error == {"step": "split", "message": "bad"}


def test_a_child_job_is_written_once_when_it_ends():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    apply(state, JobSubmitted(JOB, "w", {}, 1.0))
    event = StepReplied(cid(JOB, "split"), b'{"items": ["a", "b"]}', 2.0, attempt=1)
    _, commands = apply(state, event)
    batch, outbound = record(state, event, commands, "wm")
    children = state.jobs[JOB].steps["fan"].children
    # The fan-out writes the children's requests, but no job rows or started rows for them.
    assert batch.jobs == []
    assert [r.kind for r in batch.events] == [EventKind.REPLIED] + [EventKind.DISPATCHED] * 2
    assert [r.job_id for r in outbound] == children
    event = StepReplied(cid(children[0], "work"), b'{"item": 1}', 3.0)
    _, commands = apply(state, event)
    batch, _ = record(state, event, commands, "wm")
    (row,) = batch.jobs
    assert (row.id, row.parent_id, row.root_id, row.status) == (children[0], JOB, JOB, "completed")
    assert row.snapshot["status"] == "completed" and row.result == {"item": 1}
    assert [r.kind for r in batch.events] == [EventKind.REPLIED]
