"""on_error and on_cancel: steps run after a job fails or is cancelled, before it is reported.

The job's status changes at once; JobFinished and the outcome notices wait for the branch.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.engine.helpers import (
    JOB,
    assert_ignored,
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
    snapshot,
    submit,
    the_timer,
)
from workflow_manager.engine import (
    EngineState,
    JobFinished,
    JobStatus,
    NotifyOutcome,
    StepStatus,
)

BRANCHED = """
workflows:
  - name: w
    timeout: 1000
    steps:
      - name: a
        retries: 2
        retry_backoff: {initial: 1, max: 1}
      - name: b
        depends: [a]
      - name: side
    on_error:
      - name: report
        queue: q-report
      - name: audit
      - name: page
        depends: [report, audit]
    on_cancel:
      - name: undo
      - name: tell
        depends: [undo]
"""


def _running(payload: dict[str, Any] | None = None, reply_to: str | None = "q1") -> EngineState:
    state = make_state(BRANCHED)
    submit(state, "w", {"p": 1} if payload is None else payload, reply_to=reply_to, at=1.0)
    return state


def _exhaust_a(state: EngineState, message: str = "boom") -> list:
    """Fail every attempt of `a` (3 of them); the commands of the last failure."""
    at = 10.0
    for _ in range(2):
        timer = the_timer(reply(state, cid(JOB, "a"), error=message, at=at))
        at = timer.due_at
        fire(state, timer.key, at)
    return reply(state, cid(JOB, "a"), error=message, at=at + 1)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"p": 1}, {"error": {"step": "a", "message": "boom", "attempts": 3}, "p": 1}),
        ({}, {"error": {"step": "a", "message": "boom", "attempts": 3}}),
        ({"error": "mine", "q": [1]}, {"error": "mine", "q": [1]}),  # the payload wins
    ],
)
def test_on_error_steps_start_with_the_error_and_the_payload(payload, expected):
    state = _running(payload)
    commands = _exhaust_a(state)
    assert of_type(commands, JobFinished) == []
    assert of_type(commands, NotifyOutcome) == []
    report, audit = dispatches(commands)
    assert (report.step, report.queue, report.attempt) == ("report", "q-report", 1)
    assert audit.step == "audit"
    assert report.body == expected == audit.body
    assert report.correlation_id == cid(JOB, "report")
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED
    assert job.error == {"step": "a", "message": "boom"}
    assert not job.is_settled


def test_the_job_is_finished_and_reported_only_when_its_branch_has_ended():
    state = _running(reply_to="q1")
    submit(state, "w", job_id=JOB, reply_to="q2", at=2.0)
    _exhaust_a(state)
    submit(state, "w", job_id=JOB, reply_to="q3", at=20.0)  # asked while the branch runs

    commands = reply(state, cid(JOB, "report"), {"sent": True}, at=21.0)
    assert dispatches(commands) == []
    commands = reply(state, cid(JOB, "audit"), {"logged": 1}, at=22.0)
    (page,) = dispatches(commands)
    assert page.step == "page"
    assert page.body == {"sent": True, "logged": 1}
    assert of_type(commands, JobFinished) == []

    commands = reply(state, cid(JOB, "page"), {"paged": True}, at=23.0)
    error = {"step": "a", "message": "boom"}
    done = finished(commands)
    assert (done.status, done.error, done.result, done.at) == ("failed", error, None, 23.0)
    assert of_type(commands, NotifyOutcome) == [
        NotifyOutcome(q, JOB, JOB, "failed", {"error": error}) for q in ("q1", "q2", "q3")
    ]
    job = state.jobs[JOB]
    assert job.is_settled
    assert job.status is JobStatus.FAILED
    assert [job.steps[s].status for s in ("report", "audit", "page")] == ["completed"] * 3


def test_main_steps_get_no_more_replies_while_the_branch_runs():
    state = _running()
    _exhaust_a(state)
    before = snapshot(state)
    for step in ("side", "a", "b", "undo", "nope"):
        assert_ignored(state, reply(state, cid(JOB, step), {}, at=30.0), before)


def test_a_failing_branch_step_ends_the_branch():
    state = _running()
    _exhaust_a(state)
    commands = reply(state, cid(JOB, "report"), error="mail server down", at=21.0)
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error == {"step": "a", "message": "boom"}  # the job's error, not the branch's
    assert len(of_type(commands, NotifyOutcome)) == 1
    assert dispatches(commands) == []
    assert state.jobs[JOB].steps["report"].status is StepStatus.FAILED
    assert state.jobs[JOB].is_settled
    assert state.timers == {}

    before = snapshot(state)
    for step in ("audit", "report", "page"):
        assert_ignored(state, reply(state, cid(JOB, step), {}, at=22.0), before)


def test_branch_steps_follow_the_workflow_defaults():
    text = BRANCHED.replace("    timeout: 1000\n", "    defaults: {retries: 1, timeout: 50}\n")
    state = make_state(text)
    submit(state, "w", {"p": 1}, at=1.0)
    retry = the_timer(reply(state, cid(JOB, "side"), error="side broke", at=2.0))
    fire(state, retry.key, retry.due_at)
    reply(state, cid(JOB, "side"), error="side broke", at=3.0)
    assert state.jobs[JOB].status is JobStatus.FAILED
    commands = reply(state, cid(JOB, "report"), error="flaky", at=3.0)
    retry = the_timer(commands)
    commands = fire(state, retry.key, retry.due_at)
    (again,) = dispatches(commands)
    assert (again.step, again.attempt) == ("report", 2)
    deadline = the_timer(commands)
    assert deadline.due_at == retry.due_at + 50
    commands = fire(state, deadline.key, deadline.due_at)
    assert finished(commands).error == {"step": "side", "message": "side broke"}


@pytest.mark.parametrize("branches", ["", "on_cancel"])
def test_without_an_on_error_branch_the_failed_job_finishes_at_once(branches):
    text = "workflows: [{name: w, steps: [{name: a}]"
    text += ", on_cancel: [{name: undo}]}]" if branches else "}]"
    state = make_state(text)
    submit(state, "w", reply_to="q1")
    commands = reply(state, cid(JOB, "a"), error="boom")
    assert finished(commands).status == JobStatus.FAILED
    assert len(of_type(commands, NotifyOutcome)) == 1
    assert dispatches(commands) == []
    assert state.jobs[JOB].is_settled


def test_the_job_deadline_runs_on_error_with_no_step():
    state = make_state(BRANCHED)
    deadline = the_timer(submit(state, "w", {"p": 1}, at=0.0))
    commands = fire(state, deadline.key, deadline.due_at)
    assert dispatched_steps(commands) == ["report", "audit"]
    error = dispatches(commands)[0].body["error"]
    assert error["step"] is None
    assert error["message"] == "job timed out after 1000s"
    assert of_type(commands, JobFinished) == []


# -- on_cancel ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"p": 1}, {"cancelled": True, "p": 1}),
        ({"cancelled": "by hand"}, {"cancelled": "by hand"}),
    ],
)
def test_on_cancel_steps_start_with_cancelled_and_the_payload(payload, expected):
    state = _running(payload)
    commands = cancel(state, at=5.0)
    assert state.jobs[JOB].status is JobStatus.CANCELLED
    (undo,) = dispatches(commands)
    assert (undo.step, undo.body) == ("undo", expected)
    assert of_type(commands, JobFinished) == []

    commands = reply(state, cid(JOB, "undo"), {"undone": True}, at=6.0)
    (tell,) = dispatches(commands)
    assert tell.body == {"undone": True}
    commands = reply(state, cid(JOB, "tell"), {}, at=7.0)
    done = finished(commands)
    assert done.status == JobStatus.CANCELLED
    assert of_type(commands, NotifyOutcome)[0].status == "cancelled"


def test_a_cancelled_job_without_on_cancel_finishes_at_once():
    state = make_state("workflows: [{name: w, steps: [{name: a}], on_error: [{name: e}]}]")
    submit(state, "w")
    commands = cancel(state)
    assert finished(commands).status == JobStatus.CANCELLED
    assert dispatches(commands) == []


# -- branches and child jobs -------------------------------------------------------------

FANNED = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
    on_error:
      - name: report
      - name: each
        task: t
"""


def test_only_the_top_level_job_runs_on_error_once():
    state = make_state(FANNED)
    submit(state, "w", {"items": [1, 2, 3]})
    commands = reply(state, cid(child_id(JOB, "fan", 1), "leaf"), error="bad item")
    assert dispatched_steps(commands) == ["report", "leaf", "leaf", "leaf"]
    assert {d.job_id for d in dispatches(commands)[1:]} == {
        child_id(JOB, "each", i) for i in range(3)
    }
    assert [c.job_id for c in of_type(commands, JobFinished)] == [
        child_id(JOB, "fan", 1),
        child_id(JOB, "fan", 0),
        child_id(JOB, "fan", 2),
    ]
    body = dispatches(commands)[0].body
    assert body["items"] == [1, 2, 3]
    assert body["error"]["step"] == "fan"
    assert body["error"]["attempts"] == 0  # a task step is never dispatched itself


def test_a_task_step_in_a_branch_gathers_its_children_and_ends_the_branch():
    state = make_state(FANNED)
    submit(state, "w", {"items": [1, 2]})
    reply(state, cid(child_id(JOB, "fan", 0), "leaf"), error="bad item")
    reply(state, cid(JOB, "report"), {})
    reply(state, cid(child_id(JOB, "each", 0), "leaf"), {"item": "a"})
    commands = reply(state, cid(child_id(JOB, "each", 1), "leaf"), {"item": "b"})
    assert finished(commands).status == JobStatus.FAILED
    assert state.jobs[JOB].steps["each"].output["items"] == ["a", "b"]
    assert state.jobs[JOB].is_settled


def test_a_failing_child_of_a_branch_task_step_ends_the_branch_and_cancels_its_siblings():
    state = make_state(FANNED)
    submit(state, "w", {"items": [1, 2]})
    reply(state, cid(child_id(JOB, "fan", 0), "leaf"), error="bad item")
    commands = reply(state, cid(child_id(JOB, "each", 0), "leaf"), error="worse")
    assert finished(commands).status == JobStatus.FAILED
    assert finished(commands, child_id(JOB, "each", 1)).status == JobStatus.CANCELLED
    assert state.jobs[JOB].steps["each"].status is StepStatus.FAILED
    assert all(not job.is_running for job in state.jobs.values())
