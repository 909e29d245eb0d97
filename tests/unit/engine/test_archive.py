"""JobArchived: a settled top-level job leaves memory, with its children and their gone ids.

Anything else (a running job, a job still running its on_error branch, a child, an unknown
id, a job retried since it settled) is left alone. The event produces no commands at all.
"""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    NOT_A_JOB,
    OTHER_JOB,
    child_id,
    cid,
    dispatched_steps,
    make_state,
    reply,
    retry_job,
    snapshot,
    submit,
)
from workflow_manager.engine import Command, EngineState, JobArchived, JobStatus, apply

FLOW = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
      - name: after
        depends: [fan]
      - name: side
    on_error:
      - name: cleanup
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""


def archive(state: EngineState, job_id: str = JOB, at: float = 50.0) -> list[Command]:
    """Apply a JobArchived event and return the commands."""
    _, commands = apply(state, JobArchived(job_id, at))
    return commands


def _kids(job_id: str, count: int) -> list[str]:
    return [child_id(job_id, "fan", i) for i in range(count)]


def _running(items: int = 2) -> EngineState:
    """JOB and OTHER_JOB running; one child of OTHER_JOB has completed (a gone id)."""
    state = make_state(FLOW)
    submit(state, "w", {"items": list(range(items))})
    submit(state, "w", {"items": [0, 1]}, job_id=OTHER_JOB)
    reply(state, cid(_kids(OTHER_JOB, 2)[0], "work"), {})
    return state


def _completed() -> EngineState:
    state = _running()
    for kid in _kids(JOB, 2):
        reply(state, cid(kid, "work"), {})
    reply(state, cid(JOB, "side"), {})
    reply(state, cid(JOB, "after"), {})
    assert state.jobs[JOB].status is JobStatus.COMPLETED and state.jobs[JOB].is_settled
    return state


def _failing() -> EngineState:
    """JOB failed at `side` with one child completed, two cancelled; on_error still running."""
    state = _running(items=3)
    reply(state, cid(_kids(JOB, 3)[0], "work"), {})
    commands = reply(state, cid(JOB, "side"), error="boom")
    assert dispatched_steps(commands) == ["cleanup"]
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED and not job.is_settled
    return state


def _assert_other_job_untouched(state: EngineState) -> None:
    other_kids = _kids(OTHER_JOB, 2)
    assert state.jobs[OTHER_JOB].is_running
    assert other_kids[1] in state.jobs
    assert state.gone.as_dict() == {other_kids[0]: OTHER_JOB}
    assert state.gone.roots() == {OTHER_JOB}


def test_a_settled_job_leaves_memory_with_its_childrens_gone_ids():
    state = _completed()
    kids = _kids(JOB, 2)
    assert all(state.gone.root_of(k) == JOB for k in kids)
    assert archive(state) == []
    assert JOB not in state.jobs
    assert not any(k in state.jobs or k in state.gone for k in kids)
    assert JOB not in state.gone.roots()
    _assert_other_job_untouched(state)


def test_a_settled_failed_job_leaves_memory_with_its_cancelled_children():
    state = _failing()
    kids = _kids(JOB, 3)
    assert all(state.jobs[k].status is JobStatus.CANCELLED for k in kids[1:])
    reply(state, cid(JOB, "cleanup"), {})
    assert state.jobs[JOB].is_settled
    assert archive(state) == []
    assert not any(k in state.jobs or k in state.gone for k in [JOB, *kids])
    assert JOB not in state.gone.roots()
    _assert_other_job_untouched(state)


def test_a_failed_job_still_running_its_on_error_branch_stays():
    state = _failing()
    before = snapshot(state)
    assert archive(state) == []
    assert state == before
    # Once the branch ends, the job may go.
    reply(state, cid(JOB, "cleanup"), {})
    archive(state)
    assert JOB not in state.jobs


@pytest.mark.parametrize(
    "job_id",
    [
        JOB,  # running
        _kids(JOB, 2)[0],  # a running child
        _kids(OTHER_JOB, 2)[0],  # a completed child, out of memory (a gone id)
        NOT_A_JOB,  # unknown
        "not-a-uuid",
    ],
    ids=["running job", "running child", "completed child", "unknown job", "not a uuid"],
)
def test_anything_but_a_settled_top_level_job_is_left_alone(job_id):
    state = _running()
    before = snapshot(state)
    assert archive(state, job_id) == []
    assert state == before


def test_a_settled_child_of_a_running_job_is_left_alone():
    state = _failing()
    cancelled = _kids(JOB, 3)[1]
    assert state.jobs[cancelled].is_settled
    before = snapshot(state)
    assert archive(state, cancelled) == []
    assert state == before


def test_a_job_retried_before_its_archive_event_arrives_stays():
    state = _failing()
    reply(state, cid(JOB, "cleanup"), {})
    assert state.jobs[JOB].is_settled
    retry_job(state, at=40.0)
    assert state.jobs[JOB].is_running
    before = snapshot(state)
    assert archive(state) == []
    assert state == before
