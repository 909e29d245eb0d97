"""Timers: reply deadlines of step attempts, the whole job's deadline, and stale timers.

`EngineState.timers` holds exactly the timers still pending: StartTimer adds one,
CancelTimer and the TimerFired that delivers it remove it.
"""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    NOT_A_JOB,
    OTHER_JOB,
    assert_ignored,
    child_id,
    cid,
    dispatched_steps,
    dispatches,
    finished,
    fire,
    make_state,
    of_type,
    reply,
    snapshot,
    submit,
    the_timer,
    timers_cancelled,
    timers_started,
)
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    JobFinished,
    JobStatus,
    NotifyOutcome,
    StepStatus,
    timers,
)

TIMED = """
workflows:
  - name: w
    timeout: 300
    defaults:
      timeout: 20
    steps:
      - name: a
        retries: 1
        retry_backoff: {initial: 2, max: 2}
      - name: b
        depends: [a]
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
"""
KID = child_id(JOB, "fan", 0)
# Timer keys are opaque to the orchestrator; tests name them through the engine's own builders.


def _submitted(reply_to: str | None = None) -> tuple[EngineState, dict[str, float]]:
    state = make_state(TIMED)
    commands = submit(state, "w", {"items": ["x"]}, reply_to=reply_to, at=1.0)
    return state, timers_started(commands)


def _key(timers: dict[str, float], due_at: float) -> str:
    (key,) = [k for k, due in timers.items() if due == due_at]
    return key


def test_submitting_starts_the_job_deadline_and_each_dispatched_attempts_deadline():
    state, started = _submitted()
    # the job's deadline at 1 + 300; a's and the child's leaf's at 1 + 20
    assert sorted(started.values()) == [21.0, 21.0, 301.0]
    assert state.timers == started


def test_a_good_reply_cancels_the_attempts_deadline_and_the_next_step_gets_its_own():
    state, started = _submitted()
    a_deadline = timers.step_timeout(JOB, "a", 1)
    commands = reply(state, cid(JOB, "a"), {"ok": 1}, at=5.0)
    assert timers_cancelled(commands) == {a_deadline}
    assert dispatched_steps(commands) == ["b"]
    assert list(timers_started(commands).values()) == [25.0]
    assert a_deadline not in state.timers

    before = snapshot(state)
    assert_ignored(state, fire(state, a_deadline, 21.0), before)


def test_a_deadline_passing_fails_the_attempt_and_the_next_attempt_has_a_new_deadline():
    state, _ = _submitted()
    a_deadline = timers.step_timeout(JOB, "a", 1)
    commands = fire(state, a_deadline, 21.0)
    assert dispatches(commands) == []
    run = state.jobs[JOB].steps["a"]
    assert run.status is StepStatus.RETRYING
    assert run.error and "20" in run.error
    retry = the_timer(commands)
    assert 1.0 <= retry.due_at - 21.0 <= 2.0
    assert a_deadline not in state.timers

    commands = fire(state, retry.key, retry.due_at)
    (again,) = dispatches(commands)
    assert (again.step, again.attempt) == ("a", 2)
    deadline = the_timer(commands)
    assert deadline.due_at == retry.due_at + 20
    assert deadline.key != a_deadline

    commands = fire(state, deadline.key, deadline.due_at)
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error["step"] == "a"
    assert "20" in done.error["message"]
    assert finished(commands, KID).status == JobStatus.CANCELLED
    assert state.timers == {}
    assert dispatches(commands) == []


def test_a_childs_deadline_fails_the_child_and_so_the_parent():
    state, _ = _submitted()
    leaf_deadline = timers.step_timeout(KID, "leaf", 1)
    commands = fire(state, leaf_deadline, 21.0)
    assert finished(commands, KID).status == JobStatus.FAILED
    assert finished(commands, KID).error["step"] == "leaf"
    assert finished(commands).error["step"] == "fan"
    assert state.jobs[JOB].steps["a"].status is StepStatus.RUNNING  # left as it was
    assert state.timers == {}


def test_no_deadline_without_a_timeout():
    state = make_state("workflows: [{name: w, steps: [{name: a, retries: 2}]}]")
    commands = submit(state, "w")
    assert timers_started(commands) == {}
    assert state.timers == {}


# -- the job's deadline ------------------------------------------------------------------


def test_the_job_deadline_fails_the_job_at_once():
    state, started = _submitted(reply_to="client-q")
    job_deadline = _key(started, 301.0)
    reply(state, cid(JOB, "a"), {"ok": 1}, at=5.0)
    pending = set(state.timers)
    commands = fire(state, job_deadline, 301.0)
    error = {"step": None, "message": "job timed out after 300s"}
    done = finished(commands)
    assert (done.status, done.error, done.result, done.at) == ("failed", error, None, 301.0)
    job = state.jobs[JOB]
    assert (job.status, job.error, job.finished_at) == (JobStatus.FAILED, error, 301.0)
    assert of_type(commands, NotifyOutcome) == [
        NotifyOutcome("client-q", JOB, JOB, "failed", {"error": error})
    ]
    assert finished(commands, KID).status == JobStatus.CANCELLED
    assert dispatches(commands) == []
    assert state.timers == {}
    assert timers_cancelled(commands) == pending - {job_deadline}  # b's and the leaf's

    before = snapshot(state)
    for job_id, step in ((JOB, "b"), (KID, "leaf")):
        assert_ignored(state, reply(state, cid(job_id, step), {}, at=302.0), before)


@pytest.mark.parametrize(("timeout", "text"), [(300, "300s"), (1.5, "1.5s"), (90.0, "90s")])
def test_the_job_deadline_message_names_the_timeout(timeout, text):
    state = make_state(f"workflows: [{{name: w, timeout: {timeout}, steps: [{{name: a}}]}}]")
    key = the_timer(submit(state, "w", at=0.0)).key
    commands = fire(state, key, float(timeout))
    assert finished(commands).error == {"step": None, "message": f"job timed out after {text}"}


def test_completing_the_job_cancels_its_deadline():
    state, started = _submitted()
    job_deadline = _key(started, 301.0)
    reply(state, cid(JOB, "a"), {}, at=2.0)
    reply(state, cid(KID, "leaf"), {}, at=3.0)
    commands = reply(state, cid(JOB, "b"), {}, at=4.0)
    assert finished(commands).status == JobStatus.COMPLETED
    assert job_deadline in timers_cancelled(commands)
    assert state.timers == {}
    before = snapshot(state)
    assert_ignored(state, fire(state, job_deadline, 301.0), before)


# -- stale timers ------------------------------------------------------------------------


def _stale_keys() -> tuple[EngineState, list[str]]:
    """JOB with a answered (its deadline cancelled) and the retry of b fired already."""
    text = TIMED.replace("      - name: b\n", "      - name: b\n        retries: 1\n")
    state = make_state(text)
    a_deadline = timers.step_timeout(JOB, "a", 1)
    assert a_deadline in timers_started(submit(state, "w", {"items": ["x"]}, at=1.0))
    reply(state, cid(JOB, "a"), {}, at=2.0)
    retry = the_timer(reply(state, cid(JOB, "b"), error="boom", at=3.0))
    fire(state, retry.key, retry.due_at)
    return state, [a_deadline, retry.key]


@pytest.mark.parametrize(
    "key",
    [
        "cancelled",
        "fired",
        "nonsense",
        timers.job_timeout(NOT_A_JOB),
        timers.step_timeout(OTHER_JOB, "a", 1),
        timers.retry_due(JOB, "b", 9),
        timers.step_timeout(JOB, "nope", 1),
        "",
    ],
)
def test_a_timer_that_is_not_pending_is_ignored_and_changes_nothing(key):
    state, (cancelled, fired) = _stale_keys()
    key = {"cancelled": cancelled, "fired": fired}.get(key, key)
    assert key not in state.timers
    before = snapshot(state)
    assert_ignored(state, fire(state, key, 500.0), before)


def test_the_pending_timers_follow_the_start_and_cancel_commands():
    state = make_state(TIMED)
    ledger: dict[str, float] = {}

    def track(commands: list) -> list:
        ledger.update(timers_started(commands))
        for key in timers_cancelled(commands):
            del ledger[key]
        assert state.timers == ledger
        return commands

    track(submit(state, "w", {"items": ["x", "y"]}, at=1.0))
    retry = the_timer(track(reply(state, cid(JOB, "a"), error="boom", at=2.0)))
    ledger.pop(retry.key)  # delivered
    commands = track(fire(state, retry.key, retry.due_at))
    assert of_type(commands, Dispatch)
    track(reply(state, cid(child_id(JOB, "fan", 1), "leaf"), {}, at=5.0))
    commands = track(reply(state, cid(child_id(JOB, "fan", 0), "leaf"), error="x", at=6.0))
    assert of_type(commands, JobFinished)
    assert ledger == {}
