"""Delayed starts: a submission with a future `not_before` makes a scheduled job that its
timer starts; cancelling it before then ends it without running anything."""

from __future__ import annotations

from tests.unit.engine.helpers import (
    JOB,
    cancel,
    dispatched_steps,
    finished,
    fire,
    make_state,
    of_type,
    timers_cancelled,
    timers_started,
)
from workflow_manager.engine import (
    Dispatch,
    JobScheduled,
    JobStarted,
    JobStatus,
    JobSubmitted,
    NotifyOutcome,
    apply,
    timers,
)
from workflow_manager.engine.snapshot import restore, snapshot

FLOW = """
workflows:
  - {name: w, timeout: 100, steps: [{name: a}, {name: b, depends: [a]}, {name: c}]}
"""


def _scheduled(not_before: float, at: float = 1.0, reply_to: str | None = "q"):
    state = make_state(FLOW)
    event = JobSubmitted(JOB, "w", {"p": 1}, at, reply_to=reply_to, not_before=not_before)
    _, commands = apply(state, event)
    return state, commands


def test_a_future_not_before_makes_a_scheduled_job_with_its_start_timer_only():
    state, commands = _scheduled(11.0)
    job = state.jobs[JOB]
    assert job.status is JobStatus.SCHEDULED and job.start_at == 11.0
    assert not of_type(commands, JobStarted) and not dispatched_steps(commands)
    (made,) = of_type(commands, JobScheduled)
    assert (made.job_id, made.start_at, made.submitted_at, made.at) == (JOB, 11.0, 1.0, 1.0)
    # The job's deadline runs from its start, not from its submission.
    assert timers_started(commands) == {timers.job_start(JOB): 11.0}


def test_the_start_timer_starts_the_job_and_its_deadline():
    state, _ = _scheduled(11.0)
    commands = fire(state, timers.job_start(JOB), 11.5)
    (started,) = of_type(commands, JobStarted)
    assert (started.at, started.submitted_at) == (11.5, 1.0)
    assert dispatched_steps(commands) == ["a", "c"]
    assert state.jobs[JOB].status is JobStatus.RUNNING
    assert timers_started(commands) == {timers.job_timeout(JOB): 111.5}


def test_a_not_before_now_or_in_the_past_starts_at_once():
    for not_before in (1.0, 0.5):
        state, commands = _scheduled(not_before)
        assert state.jobs[JOB].status is JobStatus.RUNNING
        assert not of_type(commands, JobScheduled)
        assert dispatched_steps(commands) == ["a", "c"]


def test_cancelling_a_scheduled_job_ends_it_unstarted_and_drops_its_timer():
    state, _ = _scheduled(11.0)
    commands = cancel(state, JOB, at=2.0)
    done = finished(commands)
    assert done.status == JobStatus.CANCELLED
    assert done.error == {"step": None, "message": "cancelled before it started"}
    assert timers_cancelled(commands) == {timers.job_start(JOB)}
    assert not of_type(commands, Dispatch) and not of_type(commands, JobStarted)
    (notice,) = of_type(commands, NotifyOutcome)
    assert (notice.reply_to, notice.status) == ("q", JobStatus.CANCELLED)
    assert state.timers == {}
    # A start timer that fires anyway (it was already due) starts nothing.
    assert not of_type(fire(state, timers.job_start(JOB), 11.0), JobStarted)


def test_a_scheduled_job_is_not_settled_and_its_snapshot_keeps_the_start_time():
    state, _ = _scheduled(11.0)
    job = state.jobs[JOB]
    assert not job.is_settled and not job.is_running
    back = restore(snapshot(job), job.workflow)
    assert (back.status, back.start_at) == (JobStatus.SCHEDULED, 11.0)


def test_submitting_the_same_id_again_while_scheduled_adds_the_reply_queue():
    state, _ = _scheduled(11.0)
    apply(state, JobSubmitted(JOB, "w", {"p": 1}, 2.0, reply_to="q2", not_before=20.0))
    assert state.jobs[JOB].reply_to == ["q", "q2"]
    assert state.jobs[JOB].start_at == 11.0
