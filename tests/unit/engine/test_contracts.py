"""Schemas: a bad payload rejects the submission, a bad input fails the step before any request,
a bad output fails that attempt (retried by policy), a bad child payload fails the task step."""

from __future__ import annotations

from tests.unit.engine.helpers import (
    JOB,
    cid,
    dispatched_steps,
    dispatches,
    finished,
    make_state,
    of_type,
    reply,
    submit,
)
from workflow_manager.engine import JobRejected, JobStatus, StepFinished, StepStatus

ORDER = """
workflows:
  - name: w
    payload_schema:
      type: object
      required: [qty]
      properties: {qty: {type: integer, minimum: 1}}
    steps:
      - name: price
        output_schema: {type: object, required: [total], properties: {total: {type: number}}}
        retries: 1
        retry_backoff: {initial: 0, max: 0}
      - name: charge
        depends: [price]
        input_schema: {type: object, properties: {total: {maximum: 100}}}
"""

TASK = """
workflows:
  - name: w
    steps:
      - {name: fan, task: t}
    tasks:
      - name: t
        itemListKey: items
        payload_schema: {properties: {item: {type: integer}}}
        steps:
          - name: leaf
"""


def test_a_payload_that_does_not_match_rejects_the_submission_naming_path_and_rule():
    state = make_state(ORDER)
    (rejected,) = submit(state, payload={"qty": 0})
    assert isinstance(rejected, JobRejected)
    assert rejected.kind == "invalid-payload"
    assert rejected.reason == (
        "payload does not match the payload_schema of workflow 'w': at $.qty: 0 is less than"
        " the minimum of 1 (rule minimum) (schema: inline)"
    )
    assert JOB not in state.jobs


def test_a_duplicate_trigger_is_answered_whatever_its_payload():
    state = make_state(ORDER)
    submit(state, payload={"qty": 1})
    commands = submit(state, payload={})
    assert not of_type(commands, JobRejected)
    assert state.jobs[JOB].payload == {"qty": 1}


def test_a_bad_output_fails_the_attempt_and_is_retried_then_fails_the_step():
    state = make_state(ORDER)
    submit(state, payload={"qty": 2})
    commands = reply(state, cid(JOB, "price"), {"total": "ten"})
    (retried,) = of_type(commands, StepFinished)
    assert (retried.outcome, retried.reason) == ("retrying", "invalid_reply")
    assert retried.message == (
        "output of step 'price' does not match its output_schema: at $.total: 'ten' is not of"
        " type 'number' (rule type) (schema: inline)"
    )
    assert [(d.step, d.attempt) for d in dispatches(commands)] == [("price", 2)]
    done = finished(reply(state, cid(JOB, "price"), {}))
    assert done.status == "failed"
    assert "at $: 'total' is a required property (rule required)" in done.error["message"]


def test_a_bad_input_fails_the_step_without_a_request():
    state = make_state(ORDER)
    submit(state, payload={"qty": 2})
    commands = reply(state, cid(JOB, "price"), {"total": 500})
    assert dispatched_steps(commands) == []
    done = finished(commands)
    assert done.error == {
        "step": "charge",
        "message": "input of step 'charge' does not match its input_schema: at $.total: 500 is"
        " greater than the maximum of 100 (rule maximum) (schema: inline)",
    }
    assert state.jobs[JOB].steps["charge"].attempt == 0


def test_matching_data_runs_the_job_through():
    state = make_state(ORDER)
    submit(state, payload={"qty": 2})
    commands = reply(state, cid(JOB, "price"), {"total": 50})
    assert dispatched_steps(commands) == ["charge"]
    assert finished(reply(state, cid(JOB, "charge"), {})).status == "completed"


def test_a_child_payload_that_does_not_match_fails_the_task_step_before_any_child():
    state = make_state(TASK)
    commands = submit(state, payload={"items": [1, "two", 3]})
    assert dispatches(commands) == []
    done = finished(commands)
    assert done.error["step"] == "fan"
    assert done.error["message"].startswith(
        "task step 'fan': the payload of element 1 does not match the payload_schema of task 't':"
        " at $.item: 'two' is not of type 'integer'"
    )
    assert state.jobs[JOB].status is JobStatus.FAILED
    assert state.jobs[JOB].steps["fan"].children is None


def test_matching_child_payloads_fan_out():
    state = make_state(TASK)
    commands = submit(state, payload={"items": [1, 2]})
    assert dispatched_steps(commands) == ["leaf", "leaf"]
    assert state.jobs[JOB].steps["fan"].status is StepStatus.RUNNING
