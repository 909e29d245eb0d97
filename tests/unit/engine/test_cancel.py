"""CancelRequested: a running top-level job stops at once, with its children; others are refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.unit.engine.helpers import (
    JOB,
    NOT_A_JOB,
    assert_ignored,
    cancel,
    child_id,
    cid,
    dispatches,
    finished,
    fire,
    make_state,
    of_type,
    refused,
    reply,
    snapshot,
    submit,
    the_timer,
    timers_cancelled,
)
from workflow_manager.engine import (
    EngineState,
    JobFinished,
    JobStarted,
    JobStatus,
    NotifyOutcome,
    StepStatus,
)

FLOW = """
workflows:
  - name: w
    timeout: 100
    defaults:
      timeout: 10
      retries: 1
      retry_backoff: {initial: 2, max: 2}
    steps:
      - name: a
      - name: b
        depends: [a]
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
          - name: tail
            depends: [leaf]
    on_error:
      - name: report
"""
KIDS = [child_id(JOB, "fan", i) for i in range(3)]


def _busy() -> EngineState:
    """JOB running: kid 0 done, kid 1 waiting to retry leaf, kid 2 on tail, `a` running."""
    state = make_state(FLOW)
    submit(state, "w", {"items": [0, 1, 2]}, reply_to="q1", at=1.0)
    reply(state, cid(KIDS[0], "leaf"), {}, at=2.0)
    reply(state, cid(KIDS[0], "tail"), {"item": "zero"}, at=2.0)
    reply(state, cid(KIDS[1], "leaf"), error="flaky", at=3.0)
    reply(state, cid(KIDS[2], "leaf"), {}, at=3.0)
    return state


def test_cancelling_stops_the_job_and_its_children_at_once():
    state = _busy()
    pending = dict(state.timers)
    assert len(pending) == 4  # the job's deadline, a's, kid 2's tail's, and kid 1's retry
    commands = cancel(state, at=5.0)

    job = state.jobs[JOB]
    assert job.status is JobStatus.CANCELLED
    assert job.finished_at == 5.0
    done = finished(commands)
    assert (done.status, done.result, done.at) == ("cancelled", None, 5.0)
    assert done.error == job.error
    assert of_type(commands, NotifyOutcome) == [
        NotifyOutcome("q1", JOB, JOB, "cancelled", {"error": job.error})
    ]
    for kid in KIDS[1:]:
        assert finished(commands, kid).status == JobStatus.CANCELLED
        assert finished(commands, kid).parent_id == JOB
        assert state.jobs[kid].status is JobStatus.CANCELLED
    assert KIDS[0] not in state.jobs  # completed: out of memory, its result kept by the parent
    assert len(of_type(commands, JobFinished)) == 3
    assert dispatches(commands) == []
    assert timers_cancelled(commands) == set(pending)
    assert state.timers == {}


def test_nothing_is_dispatched_for_a_cancelled_job():
    state = _busy()
    pending = dict(state.timers)
    cancel(state, at=5.0)
    before = snapshot(state)
    for key, due in pending.items():
        assert_ignored(state, fire(state, key, due), before)
    for job_id, step in [(JOB, "a"), (KIDS[1], "leaf"), (KIDS[2], "tail"), (KIDS[0], "tail")]:
        for body, error in (({"late": 1}, None), ({}, "late failure")):
            commands = reply(state, cid(job_id, step), body, error=error, at=6.0)
            assert_ignored(state, commands, before)


def test_an_upper_case_id_names_the_same_job():
    state = _busy()
    commands = cancel(state, JOB.upper())
    assert finished(commands).status == JobStatus.CANCELLED


def test_cancelling_a_job_waiting_to_retry_cancels_the_retry():
    state = make_state(FLOW)
    submit(state, "w", {"items": []}, at=1.0)
    retry = the_timer(reply(state, cid(JOB, "a"), error="flaky", at=2.0))
    commands = cancel(state, at=3.0)
    assert retry.key in timers_cancelled(commands)
    assert state.jobs[JOB].steps["a"].status is StepStatus.RETRYING  # as it was, but inert
    before = snapshot(state)
    assert_ignored(state, fire(state, retry.key, retry.due_at), before)


# -- refused -----------------------------------------------------------------------------


def _completed(state: EngineState) -> None:
    submit(state, "w", {"items": [0]})
    for job_id, step in [(JOB, "a"), (KIDS[0], "leaf"), (KIDS[0], "tail"), (JOB, "b")]:
        reply(state, cid(job_id, step), {})
    assert state.jobs[JOB].status is JobStatus.COMPLETED


def _failed(state: EngineState) -> None:
    """Failed, and its on_error branch has ended."""
    submit(state, "w", {"items": []})
    fire(state, the_timer(reply(state, cid(JOB, "a"), error="x")).key, 3.0)
    reply(state, cid(JOB, "a"), error="x")
    reply(state, cid(JOB, "report"), {})
    assert state.jobs[JOB].is_settled


def _failing(state: EngineState) -> None:
    """Failed, its on_error branch still running."""
    submit(state, "w", {"items": []})
    fire(state, the_timer(reply(state, cid(JOB, "a"), error="x")).key, 3.0)
    reply(state, cid(JOB, "a"), error="x")
    assert state.jobs[JOB].branch_left == 1


def _cancelled(state: EngineState) -> None:
    submit(state, "w", {"items": []})
    cancel(state)


def _running(state: EngineState) -> None:
    submit(state, "w", {"items": [0, 1]})


REFUSALS: list[tuple[str, Callable[[EngineState], None], str, str, tuple[str, ...]]] = [
    ("completed", _completed, JOB, "conflict", (JOB, "completed")),
    ("failed", _failed, JOB, "conflict", (JOB, "failed")),
    ("failed, branch running", _failing, JOB, "conflict", (JOB, "failed")),
    ("cancelled", _cancelled, JOB, "conflict", (JOB, "cancelled")),
    ("unknown", _running, NOT_A_JOB, "not-found", (NOT_A_JOB,)),
    ("unknown, no jobs", lambda state: None, JOB, "not-found", (JOB,)),
    ("child of a running job", _running, KIDS[1], "conflict", (KIDS[1], JOB)),
    ("child of a finished job", _completed, KIDS[0], "conflict", (KIDS[0], JOB)),
]


@pytest.mark.parametrize(
    ("setup", "job_id", "kind", "named"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_cancel_is_refused_unless_the_job_is_a_running_top_level_job(setup, job_id, kind, named):
    state = make_state(FLOW)
    setup(state)
    before = snapshot(state)
    answer = refused(cancel(state, job_id, at=50.0))
    assert (answer.action, answer.kind) == ("cancel", kind)
    assert answer.job_id == job_id
    for name in named:
        assert name in answer.reason
    assert state == before


def test_a_refused_cancel_starts_nothing():
    state = make_state(FLOW)
    _running(state)
    commands = cancel(state, KIDS[0])
    assert of_type(commands, JobStarted) == []
    assert state.jobs[KIDS[0]].is_running
