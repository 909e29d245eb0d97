"""`fallback`: a step that fails for good sends its input and error to its fallback; the
fallback's output becomes the step's (status recovered), or both errors fail the job."""

from __future__ import annotations

import json

import pytest

from tests.unit.engine.helpers import (
    JOB,
    cancel,
    child_id,
    cid,
    dispatched_steps,
    dispatches,
    finished,
    fire,
    make_state,
    of_type,
    reply,
    retry_job,
    submit,
    the_timer,
)
from workflow_manager.engine import JobStatus, StepFinished, StepStatus
from workflow_manager.engine.snapshot import restore, snapshot

CHARGE = """
workflows:
  - name: w
    steps:
      - name: charge
        retries: 1
        retry_backoff: {initial: 0, max: 0}
        timeout: 10
        fallback: {name: by-invoice, queue: invoices, retries: 1,
                   retry_backoff: {initial: 0, max: 0}}
      - name: ship
        depends: [charge]
      - name: side
    on_error:
      - name: report
"""


def _fail_charge(state, how: str = "error") -> list:
    """Both attempts of `charge` fail (`how`: error, invalid or timeout)."""
    commands = []
    for attempt in (1, 2):
        if how == "error":
            commands = reply(state, cid(JOB, "charge"), error=f"declined {attempt}")
        elif how == "invalid":
            commands = reply(state, cid(JOB, "charge"), b"[1]")
        else:
            commands = fire(state, f"timeout:{JOB}:charge:{attempt}", 20.0 * attempt)
    return commands


def test_the_fallback_gets_the_input_and_error_and_its_output_becomes_the_steps():
    state = make_state(CHARGE)
    submit(state, payload={"order": 7})
    commands = _fail_charge(state)
    (request,) = dispatches(commands)
    assert (request.step, request.queue, request.attempt) == ("by-invoice", "invoices", 1)
    assert request.correlation_id == f"{JOB}:by-invoice"
    error = {"step": "charge", "message": "declined 2", "attempts": 2}
    assert request.body == {"order": 7, "error": error}
    assert state.jobs[JOB].steps["charge"].status is StepStatus.FAILED
    assert state.jobs[JOB].is_running
    commands = reply(state, cid(JOB, "by-invoice"), {"invoice": "I-1"})
    (ship,) = dispatches(commands)
    assert (ship.step, ship.body) == ("ship", {"invoice": "I-1"})
    charge = state.jobs[JOB].steps["charge"]
    assert (charge.status, charge.output, charge.error) == (
        StepStatus.RECOVERED, {"invoice": "I-1"}, "declined 2",
    )  # fmt: skip
    outcomes = [(c.step, c.outcome) for c in of_type(commands, StepFinished)]
    assert outcomes == [("by-invoice", "completed"), ("charge", "recovered")]
    reply(state, cid(JOB, "side"), {})
    done = finished(reply(state, cid(JOB, "ship"), {"shipped": True}))
    assert done.status == "completed"
    assert done.result == {"shipped": True}


@pytest.mark.parametrize("how", ["invalid", "timeout"])
def test_a_timeout_or_invalid_reply_falls_back_too(how: str):
    state = make_state(CHARGE)
    submit(state)
    commands = _fail_charge(state, how)
    assert dispatched_steps(commands) == ["by-invoice"]
    message = dispatches(commands)[0].body["error"]["message"]
    assert ("no reply within 10s" in message) if how == "timeout" else ("JSON object" in message)


def test_a_failing_fallback_fails_the_job_with_both_errors():
    state = make_state(CHARGE)
    submit(state)
    _fail_charge(state)
    reply(state, cid(JOB, "by-invoice"), error="no invoicing 1")
    commands = reply(state, cid(JOB, "by-invoice"), error="no invoicing 2")  # after its retry
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED
    assert job.error == {
        "step": "charge",
        "message": "declined 2; its fallback 'by-invoice' failed too: no invoicing 2",
    }
    assert job.steps["by-invoice"].error == "no invoicing 2"
    assert job.steps["charge"].error == "declined 2"
    (report,) = dispatches(commands)
    assert report.step == "report"
    assert report.body["error"]["step"] == "charge" and report.body["error"]["attempts"] == 2
    outcomes = [(c.step, c.outcome) for c in of_type(commands, StepFinished)]
    assert outcomes == [("by-invoice", "failed")]


def test_a_retried_job_runs_the_step_and_its_fallback_again_with_new_attempts():
    state = make_state(CHARGE)
    submit(state)
    reply(state, cid(JOB, "side"), {})
    _fail_charge(state)
    reply(state, cid(JOB, "by-invoice"), error="x")
    reply(state, cid(JOB, "by-invoice"), error="y")
    reply(state, cid(JOB, "report"), {})
    commands = retry_job(state)
    assert [(d.step, d.attempt) for d in dispatches(commands)] == [("charge", 3)]
    reply(state, cid(JOB, "charge"), error="again")
    commands = reply(state, cid(JOB, "charge"), error="again")
    assert [(d.step, d.attempt) for d in dispatches(commands)] == [("by-invoice", 3)]
    commands = reply(state, cid(JOB, "by-invoice"), {"ok": 1})
    assert dispatched_steps(commands) == ["ship"]


def test_a_late_fallback_reply_after_the_job_failed_is_dropped():
    state = make_state(CHARGE)
    submit(state)
    _fail_charge(state)
    reply(state, cid(JOB, "side"), error="side broke")  # fails the job; on_error runs
    assert state.jobs[JOB].status is JobStatus.FAILED
    commands = reply(state, cid(JOB, "by-invoice"), {"late": True})
    assert dispatches(commands) == []
    assert state.jobs[JOB].steps["charge"].status is StepStatus.FAILED
    assert state.jobs[JOB].status is JobStatus.FAILED


def test_cancel_stops_a_running_fallback():
    state = make_state(CHARGE)
    submit(state)
    _fail_charge(state)
    cancel(state)
    assert state.jobs[JOB].status is JobStatus.CANCELLED
    assert f"timeout:{JOB}:by-invoice:1" not in state.timers


TASK = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        fallback: {name: fan-by-hand}
      - name: after
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        max_failed_items: 1
        steps:
          - name: leaf
"""


def test_a_task_step_whose_children_failed_beyond_the_limit_falls_back():
    state = make_state(TASK)
    submit(state, payload={"items": [1, 2, 3]})
    reply(state, cid(child_id(JOB, "fan", 0), "leaf"), error="bad 0")  # tolerated
    commands = reply(state, cid(child_id(JOB, "fan", 1), "leaf"), error="bad 1")
    (request,) = dispatches(commands)
    assert request.step == "fan-by-hand"
    assert "child job" in request.body["error"]["message"]
    assert request.body["items"] == [1, 2, 3]
    # The child still running was cancelled with its step.
    stopped = state.jobs[child_id(JOB, "fan", 2)]
    assert stopped.status is JobStatus.CANCELLED
    assert stopped.error == {
        "step": None,
        "message": f"task step 'fan' of job {JOB} failed; its fallback runs",
    }
    commands = reply(state, cid(JOB, "fan-by-hand"), {"items": ["done"]})
    assert [(d.step, d.body) for d in dispatches(commands)] == [("after", {"items": ["done"]})]
    assert state.jobs[JOB].steps["fan"].status is StepStatus.RECOVERED


def test_a_recovered_job_snapshot_restores_with_its_fallback():
    state = make_state(CHARGE)
    submit(state)
    _fail_charge(state)
    reply(state, cid(JOB, "by-invoice"), {"invoice": 1})
    reply(state, cid(JOB, "side"), {})
    reply(state, cid(JOB, "ship"), {})
    job = state.jobs[JOB]
    again = restore(json.loads(json.dumps(snapshot(job))), job.workflow)
    assert again.steps["charge"].status is StepStatus.RECOVERED
    assert again.steps["by-invoice"].recovers == "charge"
    assert again.steps["by-invoice"].output == {"invoice": 1}
    assert again.steps_left == 0


def test_a_workflow_without_fallbacks_runs_no_fallback_timer():
    state = make_state("workflows: [{name: w, steps: [{name: a, timeout: 5}]}]")
    commands = submit(state)
    assert the_timer(commands).key == f"timeout:{JOB}:a:1"
    commands = reply(state, cid(JOB, "a"), error="x")
    assert finished(commands).status == "failed"
