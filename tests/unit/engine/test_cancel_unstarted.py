"""Cancelling a job that has not started (scheduled for later, or queued under a limit) runs
its workflow's on_cancel steps, as cancelling a running job does; the job settles after them."""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    OTHER_JOB,
    cancel,
    cid,
    dispatches,
    finished,
    fire,
    make_state,
    of_type,
    reply,
    timers_cancelled,
)
from workflow_manager.engine import (
    JobFinished,
    JobStarted,
    JobStatus,
    JobSubmitted,
    apply,
    replay,
    timers,
)
from workflow_manager.engine.events import CancelRequested, TimerFired

FLOW = """
workflows:
  - name: w
    concurrency: {limit: 1}
    steps: [{name: a}]
    on_cancel: [{name: tidy}]
"""
THIRD = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"


def _queued():
    """JOB runs (holding the one slot); OTHER_JOB and THIRD wait for it."""
    state = make_state(FLOW)
    apply(state, JobSubmitted(JOB, "w", {}, 1.0))
    fire(state, timers.job_admit(JOB), 1.0)
    for i, job_id in enumerate((OTHER_JOB, THIRD)):
        apply(state, JobSubmitted(job_id, "w", {"p": i}, 2.0 + i))
    return state


def test_a_scheduled_job_cancelled_runs_its_on_cancel_steps_then_settles():
    state = make_state(FLOW.replace("    concurrency: {limit: 1}\n", ""))
    apply(state, JobSubmitted(JOB, "w", {"p": 1}, 1.0, reply_to="q", not_before=50.0))
    commands = cancel(state, JOB, at=2.0)
    assert timers_cancelled(commands) == {timers.job_start(JOB)}
    (tidy,) = dispatches(commands)
    assert (tidy.step, tidy.body) == ("tidy", {"cancelled": True, "p": 1})
    assert not of_type(commands, JobFinished) and not of_type(commands, JobStarted)
    done = finished(reply(state, cid(JOB, "tidy"), {}, at=3.0))
    assert done.status is JobStatus.CANCELLED
    assert done.error == {"step": None, "message": "cancelled before it started"}


def test_a_queued_job_cancelled_leaves_the_queue_at_once_and_runs_its_on_cancel_steps():
    state = _queued()
    commands = apply(state, CancelRequested(OTHER_JOB, 5.0))[1]
    assert [d.step for d in dispatches(commands)] == ["tidy"]
    assert state.jobs[OTHER_JOB].status is JobStatus.CANCELLED
    # The running job ends: the next in line is THIRD, not the cancelled one.
    commands = reply(state, cid(JOB, "a"), {}, at=6.0)
    assert state.jobs[THIRD].status is JobStatus.QUEUED
    admitted = [c for c in commands if getattr(c, "key", None) == timers.job_admit(THIRD)]
    assert admitted
    done = finished(reply(state, cid(OTHER_JOB, "tidy"), {}, at=7.0), OTHER_JOB)
    assert done.error == {"step": None, "message": "cancelled on request while queued"}


@pytest.mark.parametrize("with_branch", [True, False])
def test_replaying_a_cancel_of_a_queued_job_rebuilds_the_same_state(with_branch):
    flow = FLOW if with_branch else FLOW.replace("    on_cancel: [{name: tidy}]\n", "")
    state = make_state(flow)
    events = [JobSubmitted(j, "w", {}, 1.0 + i) for i, j in enumerate((JOB, OTHER_JOB))]
    events.append(TimerFired(timers.job_admit(JOB), 3.0))
    events.append(CancelRequested(OTHER_JOB, 5.0))
    for event in events:
        apply(state, event)
    rebuilt = replay(make_state(flow), events)
    assert rebuilt.jobs[OTHER_JOB].status is state.jobs[OTHER_JOB].status is JobStatus.CANCELLED
    # Without on_cancel steps it settles at once; with them, once they end.
    assert rebuilt.jobs[OTHER_JOB].is_settled is state.jobs[OTHER_JOB].is_settled is not with_branch
    assert rebuilt.scopes == state.scopes
