"""Step retries: how long each wait is, and which reply counts for which attempt.

A failed attempt (x-error, a body that is not a JSON object, or a reply deadline passing)
starts a retry timer; the next attempt is dispatched only when that timer fires.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.unit.engine.helpers import (
    JOB,
    assert_ignored,
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
    Command,
    Dispatch,
    EngineState,
    Ignored,
    JobStatus,
    StartTimer,
    StepStatus,
)

RETRYING = """
workflows:
  - name: w
    defaults:
      retries: 2
      retry_backoff: {initial: 4, multiplier: 3, max: 30}
    steps:
      - name: a
        queue: q-a
      - name: b
        depends: [a]
"""


def _state(text: str = RETRYING, payload: dict[str, Any] | None = None) -> EngineState:
    state = make_state(text)
    submit(state, "w", payload or {"p": 1})
    return state


def _failed_once(at: float = 10.0) -> tuple[EngineState, StartTimer]:
    """JOB with attempt 1 of `a` failed: `a` waits to retry."""
    state = _state()
    commands = reply(state, cid(JOB, "a"), error="flaky", at=at)
    return state, the_timer(commands)


def _on_attempt_two() -> tuple[EngineState, StartTimer]:
    state, timer = _failed_once()
    fire(state, timer.key, timer.due_at)
    return state, timer


# -- waits -------------------------------------------------------------------------------

JOBS = [str(uuid.UUID(int=n * 7919 + 1, version=4)) for n in range(24)]


@pytest.mark.parametrize(
    ("backoff", "nominals"),
    [
        ("{initial: 4, multiplier: 3, max: 30}", [4, 12, 30, 30]),
        ("{initial: 1, multiplier: 2, max: 60}", [1, 2, 4, 8]),
        ("{initial: 2.5, multiplier: 1, max: 60}", [2.5, 2.5, 2.5, 2.5]),
        ("{initial: 10, multiplier: 2, max: 5}", [5, 5, 5, 5]),
        ("{}", [1, 2, 4, 8]),
    ],
)
def test_each_wait_is_between_half_the_nominal_delay_and_the_nominal_delay(backoff, nominals):
    text = f"""
workflows:
  - name: w
    steps:
      - name: a
        retries: 4
        retry_backoff: {backoff}
"""
    waits: list[list[float]] = []
    for job_id in JOBS:
        state = make_state(text)
        submit(state, "w", job_id=job_id)
        at, mine = 50.0, []
        for retry, nominal in enumerate(nominals, start=1):
            timer = the_timer(reply(state, cid(job_id, "a"), error="boom", at=at))
            wait = timer.due_at - at
            assert nominal / 2 <= wait <= nominal, (job_id, retry, wait)
            mine.append(wait)
            at = timer.due_at
            (again,) = dispatches(fire(state, timer.key, at))
            assert again.attempt == retry + 1
        waits.append(mine)
    # jittered: jobs failing together do not all retry at the same moment
    for retry in range(len(nominals)):
        assert len({round(w[retry], 9) for w in waits}) > len(JOBS) // 2


def test_the_same_events_give_the_same_waits():
    def run() -> list[Command]:
        state = make_state(RETRYING)
        log = submit(state, "w", job_id=JOBS[3])
        at = 10.0
        for _ in range(2):
            commands = reply(state, cid(JOBS[3], "a"), error="boom", at=at)
            log += commands
            timer = the_timer(commands)
            at = timer.due_at
            log += fire(state, timer.key, at)
        return log

    first, second = run(), run()
    assert first == second
    assert len(of_type(first, StartTimer)) == 2


# -- the next attempt --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{}", "disk full"),
        (b"[1, 2]", None),
        (b"null", None),
        (b'"text"', None),
        (b"42", None),
        (b"{", None),
        (b"\xff\xfe", None),
    ],
)
def test_an_x_error_or_a_body_that_is_no_json_object_fails_the_attempt(body, error):
    state = make_state(RETRYING)
    before = dispatches(submit(state, "w", {"p": 1}))[0]
    commands = reply(state, cid(JOB, "a"), body, error=error, at=10.0)
    assert dispatches(commands) == []
    timer = the_timer(commands)
    assert 2 <= timer.due_at - 10.0 <= 4
    run = state.jobs[JOB].steps["a"]
    assert run.status is StepStatus.RETRYING
    assert state.jobs[JOB].status is JobStatus.RUNNING
    assert state.timers == {timer.key: timer.due_at}

    commands = fire(state, timer.key, timer.due_at)
    (again,) = dispatches(commands)
    assert again == Dispatch(
        before.job_id,
        before.root_id,
        before.step,
        before.queue,
        before.correlation_id,
        before.body,
        before.workflow,
        attempt=2,
        trace_id=before.trace_id,
    )
    assert again.message_id != before.message_id
    assert run.status is StepStatus.RUNNING
    assert state.timers == {}


def test_the_last_allowed_failure_fails_the_step_and_the_job():
    state = _state()
    at = 10.0
    for _ in range(2):
        timer = the_timer(reply(state, cid(JOB, "a"), error="boom", at=at))
        at = timer.due_at
        fire(state, timer.key, at)
    commands = reply(state, cid(JOB, "a"), error="still broken", at=at + 1)
    assert of_type(commands, StartTimer) == []
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error == {"step": "a", "message": "still broken"}
    assert state.jobs[JOB].steps["a"].attempt == 3
    assert state.timers == {}


def test_nothing_is_dispatched_while_waiting_to_retry():
    state, timer = _failed_once()
    before = snapshot(state)
    commands = reply(state, cid(JOB, "a"), error="again", at=11.0)
    assert_ignored(state, commands, before)
    assert state.timers == {timer.key: timer.due_at}


# -- which reply counts --------------------------------------------------------------------


@pytest.mark.parametrize("attempt", [1, None])
def test_a_late_good_reply_while_waiting_to_retry_completes_the_step(attempt):
    state, timer = _failed_once()
    commands = reply(state, cid(JOB, "a"), {"late": True}, attempt=attempt, at=11.0)
    assert timers_cancelled(commands) == {timer.key}
    assert dispatched_steps(commands) == ["b"]
    assert dispatches(commands)[0].body == {"late": True}
    run = state.jobs[JOB].steps["a"]
    assert (run.status, run.output, run.attempt) == (StepStatus.COMPLETED, {"late": True}, 1)
    assert state.timers == {}

    before = snapshot(state)
    assert_ignored(state, fire(state, timer.key, timer.due_at), before)


def test_a_late_good_reply_for_an_earlier_attempt_wins_over_the_running_one():
    text = RETRYING.replace("retries: 2", "retries: 2\n      timeout: 60")
    state = make_state(text)
    first_deadline = the_timer(submit(state, "w", {"p": 1}, at=1.0))
    assert first_deadline.due_at == 61.0
    commands = reply(state, cid(JOB, "a"), error="flaky", at=10.0)
    assert timers_cancelled(commands) == {first_deadline.key}
    retry = the_timer(commands)
    commands = fire(state, retry.key, retry.due_at)
    deadline = the_timer(commands)
    assert deadline.due_at == retry.due_at + 60
    assert state.timers == {deadline.key: deadline.due_at}

    commands = reply(state, cid(JOB, "a"), {"from": 1}, attempt=1, at=20.0)
    assert timers_cancelled(commands) == {deadline.key}
    assert dispatched_steps(commands) == ["b"]
    assert state.jobs[JOB].steps["a"].output == {"from": 1}
    assert state.timers == timers_started(commands)  # only b's deadline is left

    before = snapshot(state)
    for body, error in (({"from": 2}, None), ({}, "late failure")):
        commands = reply(state, cid(JOB, "a"), body, error=error, attempt=2, at=21.0)
        assert_ignored(state, commands, before)


def test_a_failed_reply_for_a_superseded_attempt_is_ignored():
    state, _ = _on_attempt_two()
    before = snapshot(state)
    for body, error in ((b"{}", "old failure"), (b"[]", None)):
        commands = reply(state, cid(JOB, "a"), body, error=error, attempt=1, at=20.0)
        assert_ignored(state, commands, before)
    assert state.jobs[JOB].steps["a"].status is StepStatus.RUNNING


@pytest.mark.parametrize("attempt", [2, None])
def test_a_failed_reply_for_the_running_attempt_counts(attempt):
    state, _ = _on_attempt_two()
    commands = reply(state, cid(JOB, "a"), error="again", attempt=attempt, at=20.0)
    timer = the_timer(commands)
    assert 6 <= timer.due_at - 20.0 <= 12  # retry 2: nominal 4 * 3
    assert state.jobs[JOB].steps["a"].status is StepStatus.RETRYING


@pytest.mark.parametrize("attempt", [0, 3, 99])
def test_a_reply_for_an_attempt_never_sent_is_ignored(attempt):
    state, _ = _on_attempt_two()
    before = snapshot(state)
    for body, error in (({"x": 1}, None), ({}, "boom")):
        commands = reply(state, cid(JOB, "a"), body, error=error, attempt=attempt, at=20.0)
        ignored = assert_ignored(state, commands, before)
        assert isinstance(ignored, Ignored)


def test_only_the_first_good_reply_counts():
    state, _ = _on_attempt_two()
    reply(state, cid(JOB, "a"), {"first": True}, attempt=2, at=20.0)
    before = snapshot(state)
    for attempt in (1, 2, None):
        commands = reply(state, cid(JOB, "a"), {"second": True}, attempt=attempt, at=21.0)
        assert_ignored(state, commands, before)
    assert state.jobs[JOB].steps["a"].output == {"first": True}
