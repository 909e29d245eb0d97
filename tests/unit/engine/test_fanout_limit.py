"""A fan-out copies the task step's other keys into every child: past `max_fanout_bytes` of
copies it is refused, before any child starts, with an error that names the sizes."""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    dispatches,
    finished,
    reply,
    run,
    started_children,
    submit,
    workflows,
)
from workflow_manager.config.models import Workflow
from workflow_manager.engine import Dispatch, EngineState, JobStatus, StepStatus, children
from workflow_manager.engine.fanout import DEFAULT_MAX_FANOUT_BYTES
from workflow_manager.limits import DEFAULT_LIMITS

SPLIT = """
workflows:
  - name: books
    steps:
      - name: split
        task: per-item
        {fallback}
    tasks:
      - name: per-item
        itemListKey: sections
        max_in_flight: 2
        steps:
          - name: work
  - name: plain
    steps:
      - name: one
      - name: two
        depends: [one]
"""


def _state(limit: int | None = None, fallback: str = "") -> EngineState:
    flows = workflows(SPLIT.format(fallback=fallback))
    if limit is None:
        return EngineState.from_workflows(flows)
    return EngineState.from_workflows(flows, max_fanout_bytes=limit)


def _shared(size: int) -> dict[str, str]:
    """Other keys that encode to exactly `size` bytes: `{"blob":"xx..."}`."""
    overhead = len('{"blob":""}')
    return {"blob": "x" * (size - overhead)}


def test_the_engines_default_is_the_documented_one():
    assert DEFAULT_MAX_FANOUT_BYTES == DEFAULT_LIMITS["max_fanout_bytes"] == 64 * 1024 * 1024
    assert _state().max_fanout_bytes == DEFAULT_MAX_FANOUT_BYTES


def test_a_thousand_children_each_copying_a_megabyte_are_refused_before_any_starts():
    state = _state()
    payload = {**_shared(1_000_000), "sections": list(range(1000))}
    commands = submit(state, "books", payload)
    assert started_children(commands) == []
    assert dispatches(commands) == []
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error == {
        "step": "split",
        "message": (
            "task step 'split': a fan-out of 1,000 children would copy 1,000,000,000 bytes of "
            "input (each child gets the step's other keys, 'blob': 1,000,000 bytes); the limit "
            "is 67,108,864 (--max-fanout-bytes). Pass large shared data by reference (a payload "
            "store, --payload-store, stores it for you) or raise the limit"
        ),
    }
    assert state.jobs[JOB].steps["split"].children is None


@pytest.mark.parametrize(
    ("children", "each", "limit", "refused"),
    [
        (10, 100, 1000, False),  # exactly at the limit
        (10, 101, 1000, True),
        (11, 100, 1000, True),
        (1, 1001, 1000, True),  # one child: still one copy past the limit
        (1, 1000, 1000, False),
        (3, 300, 1024, False),
    ],
)
def test_the_copies_are_children_times_the_other_keys_size(children, each, limit, refused):
    state = _state(limit)
    commands = submit(state, "books", {**_shared(each), "sections": list(range(children))})
    if refused:
        message = finished(commands).error["message"]
        assert f"{children * each:,} bytes of input" in message
        assert f"{each:,} bytes); the limit is {limit:,}" in message
        assert started_children(commands) == []
    else:
        assert state.jobs[JOB].status is JobStatus.RUNNING
        assert len(started_children(commands)) == min(children, 2)  # max_in_flight


@pytest.mark.parametrize(
    "payload",
    [
        {"sections": list(range(5000))},  # no other keys: nothing is copied
        {"section": "x" * 5000, "sections": [1, 2, 3]},  # the item key is replaced, not copied
        {"blob": "x" * 5000, "sections": []},  # no children
    ],
    ids=["no other keys", "only the item key", "no children"],
)
def test_what_is_not_copied_does_not_count(payload):
    state = _state(limit=1)
    commands = submit(state, "books", payload)
    assert state.jobs[JOB].status is not JobStatus.FAILED, finished(commands).error


def test_many_keys_are_named_five_at_most():
    state = _state(limit=10)
    payload = {f"k{i}": i for i in range(8)} | {"sections": [1, 2]}
    message = finished(submit(state, "books", payload)).error["message"]
    assert "other keys, 'k0', 'k1', 'k2', 'k3', 'k4' and 3 more: " in message


def test_a_refused_fan_out_goes_to_the_steps_fallback():
    state = _state(limit=10, fallback="fallback: {name: by-hand}")
    commands = submit(state, "books", {**_shared(100), "sections": [1, 2]})
    (sent,) = dispatches(commands)
    assert sent.step == "by-hand"
    assert "would copy 200 bytes of input" in sent.body["error"]["message"]
    reply(state, sent.correlation_id, {"done": True})
    job = state.jobs[JOB]
    assert job.steps["split"].status is StepStatus.RECOVERED
    assert job.status is JobStatus.COMPLETED


def test_a_fan_out_within_the_limit_runs_as_before():
    state = _state(limit=1024)
    commands = submit(state, "books", {"title": "T", "sections": ["a", "b", "c"]})

    def answer(request: Dispatch) -> dict:
        return {"section": request.body["section"].upper()}

    run(state, commands, answer)
    job = state.jobs[JOB]
    assert (job.status, job.result) == (JobStatus.COMPLETED, {"sections": ["A", "B", "C"]})


def test_a_workflow_without_task_steps_never_measures(monkeypatch: pytest.MonkeyPatch):
    def measured(*_args: object) -> str:
        raise AssertionError("copies_problem called for a workflow without task steps")

    monkeypatch.setattr(children, "copies_problem", measured)
    state = _state(limit=1)
    commands = submit(state, "plain", {"big": "x" * 10_000})
    run(state, commands, lambda request: {"n": 1})
    assert state.jobs[JOB].status is JobStatus.COMPLETED


def test_the_limit_is_a_keyword_of_from_workflows():
    wf: dict[str, Workflow] = workflows(SPLIT.format(fallback=""))
    state = EngineState.from_workflows(wf, (), 3, max_fanout_bytes=2048)
    assert (state.max_running_jobs, state.max_fanout_bytes) == (3, 2048)
