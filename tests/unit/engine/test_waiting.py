"""Waiting steps: reached, they wait for a signal (no request); a signal completes them, an
early one is kept until they are reached, their timeout fails them; refusals say why."""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    NOT_A_JOB,
    cancel,
    child_id,
    cid,
    dispatched_steps,
    finished,
    fire,
    make_state,
    of_type,
    reply,
    retry_job,
    submit,
    timers_cancelled,
    timers_started,
)
from workflow_manager.engine import (
    JobStatus,
    Refused,
    SignalReceived,
    StepSignalled,
    StepStatus,
    StepWaiting,
    apply,
    timers,
)

FLOW = """
workflows:
  - name: w
    defaults: {retries: 3, timeout: 7}
    steps:
      - {name: fetch}
      - {name: approval, wait: true, timeout: 50, depends: [fetch]}
      - {name: apply, depends: [approval]}
    on_error:
      - {name: alert}
  - name: fan
    steps:
      - {name: each, task: t}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - {name: ok, wait: true}
"""


def _signal(state, step="approval", payload=None, job_id=JOB, at=3.0):
    body = {"ok": True} if payload is None else payload
    _, commands = apply(state, SignalReceived(job_id, step, body, at))
    return commands


def _waiting():
    state = make_state(FLOW)
    submit(state, "w", {"n": 1}, at=1.0)
    commands = reply(state, cid(JOB, "fetch"), {"doc": 1}, at=2.0)
    return state, commands


def test_a_reached_waiting_step_sends_nothing_and_waits_with_its_own_timeout():
    state, commands = _waiting()
    assert dispatched_steps(commands) == []
    (waiting,) = of_type(commands, StepWaiting)
    assert (waiting.step, waiting.at, waiting.timeout_at) == ("approval", 2.0, 52.0)
    run = state.jobs[JOB].steps["approval"]
    assert run.status is StepStatus.WAITING and run.input == {"doc": 1}
    # Its own timeout (50), not the defaults' reply timeout (7).
    assert timers_started(commands) == {timers.step_timeout(JOB, "approval", 1): 52.0}


def test_a_signal_completes_the_waiting_step_with_its_payload_and_the_job_goes_on():
    state, _ = _waiting()
    commands = _signal(state, payload={"by": "ana"})
    (signalled,) = of_type(commands, StepSignalled)
    assert (signalled.step, signalled.kept) == ("approval", False)
    assert state.jobs[JOB].steps["approval"].output == {"by": "ana"}
    assert timers_cancelled(commands) == {timers.step_timeout(JOB, "approval", 1)}
    assert dispatched_steps(commands) == ["apply"]


def test_an_early_signal_is_kept_and_completes_the_step_when_it_is_reached():
    state = make_state(FLOW)
    submit(state, "w", {}, at=1.0)
    commands = _signal(state, payload={"early": 1}, at=1.5)
    (kept,) = of_type(commands, StepSignalled)
    assert kept.kept and state.jobs[JOB].signals == {"approval": {"early": 1}}
    assert state.jobs[JOB].steps["approval"].status is StepStatus.PENDING
    commands = reply(state, cid(JOB, "fetch"), {}, at=2.0)
    assert not of_type(commands, StepWaiting)
    assert state.jobs[JOB].steps["approval"].output == {"early": 1}
    assert dispatched_steps(commands) == ["apply"]
    assert not state.jobs[JOB].signals
    assert list(state.timers) == [timers.step_timeout(JOB, "apply", 1)]


def test_the_timeout_fails_the_step_and_the_job_and_on_error_runs():
    state, _ = _waiting()
    commands = fire(state, timers.step_timeout(JOB, "approval", 1), 52.0)
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED
    assert job.error == {"step": "approval", "message": "no signal within 50s"}
    assert dispatched_steps(commands) == ["alert"]
    # A signal after that is refused: the step has failed.
    (refused,) = _signal(state, at=53.0)
    assert isinstance(refused, Refused) and refused.kind == "conflict"
    assert "is already failed" in refused.reason


def test_a_retried_job_waits_again_and_takes_a_signal():
    state, _ = _waiting()
    fire(state, timers.step_timeout(JOB, "approval", 1), 52.0)
    reply(state, cid(JOB, "alert"), {}, at=53.0)
    commands = retry_job(state, at=60.0)
    assert state.jobs[JOB].steps["approval"].status is StepStatus.WAITING
    assert timers_started(commands) == {timers.step_timeout(JOB, "approval", 2): 110.0}
    _signal(state, at=61.0)
    assert state.jobs[JOB].steps["approval"].status is StepStatus.COMPLETED


def test_cancelling_a_job_drops_the_waiting_steps_timeout():
    state, _ = _waiting()
    commands = cancel(state, at=3.0)
    assert timers.step_timeout(JOB, "approval", 1) in timers_cancelled(commands)
    assert state.timers == {}


def test_a_waiting_step_of_a_child_job_takes_its_signal():
    state = make_state(FLOW)
    submit(state, "fan", {"items": ["a"]}, at=1.0)
    child = child_id(JOB, "each", 0)
    assert state.jobs[child].steps["ok"].status is StepStatus.WAITING
    commands = _signal(state, "ok", {"fine": True}, job_id=child)
    assert finished(commands, child).status == JobStatus.COMPLETED
    assert finished(commands).status == JobStatus.COMPLETED
    assert state.jobs[JOB].result == {"fine": True, "items": [None]}


@pytest.mark.parametrize(
    ("job_id", "step", "payload", "kind", "says"),
    [
        (NOT_A_JOB, "approval", {}, "not-found", f"no job {NOT_A_JOB}"),
        (JOB, "aproval", {}, "not-found", "has no step 'aproval' (its waiting steps: approval)"),
        (JOB, "fetch", {}, "conflict", "does not wait for a signal"),
        (JOB, "approval", [1], "invalid", "must be a JSON object"),
    ],
)
def test_bad_signals_are_refused_with_the_reason(job_id, step, payload, kind, says):
    state, _ = _waiting()
    (refused,) = _signal(state, step, payload, job_id=job_id)
    assert isinstance(refused, Refused)
    assert (refused.action, refused.kind) == ("signal", kind)
    assert says in refused.reason


def test_a_second_signal_is_refused_once_the_step_completed_or_one_is_kept():
    state = make_state(FLOW)
    submit(state, "w", {}, at=1.0)
    _signal(state, at=1.5)
    (refused,) = _signal(state, at=1.6)
    assert refused.kind == "conflict" and "already kept" in refused.reason
    reply(state, cid(JOB, "fetch"), {}, at=2.0)
    (refused,) = _signal(state, at=2.5)
    assert refused.kind == "conflict" and "is already completed" in refused.reason
