"""compensate: a failed or cancelled job undoes its completed steps one at a time, newest first."""

from __future__ import annotations

from typing import Any

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
    refused,
    reply,
    retry_job,
    submit,
    the_timer,
)
from workflow_manager.engine import (
    Dispatch,
    EngineState,
    JobCompensating,
    JobStatus,
    StepCompensation,
    StepFinished,
    StepStatus,
)

CHAIN = """
workflows:
  - name: w
    steps:
      - name: s1
        compensate: {name: undo1}
      - name: s2
        depends: [s1]
        compensate: {name: undo2, queue: q-undo2, retries: 1, retry_backoff: {initial: 0}}
      - name: s3
        depends: [s2]
        compensate: {name: undo3, timeout: 5}
      - name: s4
        depends: [s3]
        compensate: {name: undo4}
    on_error:
      - name: report
    on_cancel:
      - name: tell
"""

TASKED = """
workflows:
  - name: w
    steps:
      - name: first
        compensate: {name: unfirst}
      - name: fan
        depends: [first]
        task: t
      - name: last
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: book
            compensate: {name: unbook}
          - name: mail
            depends: [book]
            compensate: {name: unmail}
"""


def _chain_to(state: EngineState, steps: int) -> None:
    submit(state, payload={"order": 7})
    for i in range(1, steps + 1):
        reply(state, cid(JOB, f"s{i}"), {f"out{i}": i})


def _answer_compensations(state: EngineState, commands: list[Any]) -> list[Dispatch]:
    """Answer each compensation request with success until none is left; the requests."""
    sent: list[Dispatch] = []
    pending = [d for d in dispatches(commands) if d.step.startswith("un")]
    while pending:
        request = pending.pop(0)
        sent.append(request)
        more = reply(state, request.correlation_id, {})
        pending += [d for d in dispatches(more) if d.step.startswith("un")]
    return sent


def test_a_failing_fourth_step_compensates_the_third_second_and_first_in_that_order():
    state = make_state(CHAIN)
    _chain_to(state, 3)
    commands = reply(state, cid(JOB, "s4"), error="card declined")
    (compensating,) = of_type(commands, JobCompensating)
    assert (compensating.reason, compensating.count) == ("failed", 3)
    assert dispatched_steps(commands) == ["undo3"]  # one at a time; on_error waits
    first = dispatches(commands)[0]
    assert first.correlation_id == f"{JOB}:undo3"
    assert first.body == {
        "input": {"out2": 2},
        "output": {"out3": 3},
        "reason": "failed",
        "error": {"step": "s4", "message": "card declined", "attempts": 1},
    }
    more = reply(state, first.correlation_id, {})
    assert dispatched_steps(more) == ["undo2"]
    assert dispatches(more)[0].queue == "q-undo2"
    more = reply(state, cid(JOB, "undo2"), {})
    assert dispatched_steps(more) == ["undo1"]
    assert dispatches(more)[0].body["input"] == {"order": 7}
    more = reply(state, cid(JOB, "undo1"), {})
    assert dispatched_steps(more) == ["report"]  # then on_error, as today
    job = state.jobs[JOB]
    statuses = {name: job.steps[name].status for name in ("s1", "s2", "s3", "s4")}
    assert statuses == {
        "s1": StepStatus.COMPENSATED,
        "s2": StepStatus.COMPENSATED,
        "s3": StepStatus.COMPENSATED,
        "s4": StepStatus.FAILED,
    }
    done = reply(state, cid(JOB, "report"), {})
    assert finished(done).status == JobStatus.FAILED
    assert not state.compensating


def test_each_compensation_reports_compensating_then_compensated():
    state = make_state(CHAIN)
    _chain_to(state, 1)
    commands = reply(state, cid(JOB, "s2"), error="boom")
    marks = of_type(commands, StepCompensation)
    assert [(m.step, m.compensation, m.outcome) for m in marks] == [("s1", "undo1", "compensating")]
    more = reply(state, cid(JOB, "undo1"), {})
    marks = of_type(more, StepCompensation)
    assert [(m.step, m.outcome) for m in marks] == [("s1", "compensated")]
    (done,) = [f for f in of_type(more, StepFinished) if f.step == "undo1"]
    assert done.outcome == "completed"


def test_a_failing_compensation_is_retried_then_recorded_and_the_others_go_on():
    state = make_state(CHAIN)
    _chain_to(state, 3)
    reply(state, cid(JOB, "s4"), error="boom")
    reply(state, cid(JOB, "undo3"), {})
    retried = reply(state, cid(JOB, "undo2"), error="refund refused", attempt=1)
    assert [(d.step, d.attempt) for d in dispatches(retried)] == [("undo2", 2)]
    failed = reply(state, cid(JOB, "undo2"), error="refund refused again", attempt=2)
    assert dispatched_steps(failed) == ["undo1"]
    marks = [(m.step, m.outcome, m.message) for m in of_type(failed, StepCompensation)]
    assert marks == [("s2", "failed", "refund refused again"), ("s1", "compensating", None)]
    job = state.jobs[JOB]
    assert job.steps["s2"].status is StepStatus.COMPLETED  # not undone
    assert job.compensation is not None
    assert [(c.name, c.status) for c in job.compensation.runs] == [
        ("undo3", StepStatus.COMPLETED),
        ("undo2", StepStatus.FAILED),
        ("undo1", StepStatus.RUNNING),
    ]
    assert job.compensation.runs[1].error == "refund refused again"


def test_a_compensation_timeout_counts_as_a_failed_attempt():
    state = make_state(CHAIN)
    _chain_to(state, 3)
    commands = reply(state, cid(JOB, "s4"), error="boom")
    timer = the_timer(commands)
    assert timer.due_at == 2.0 + 5
    fired = fire(state, timer.key, 7.0)
    assert dispatched_steps(fired) == ["undo2"]  # undo3 has no retries left: recorded, next
    assert state.jobs[JOB].compensation.runs[0].status is StepStatus.FAILED
    late = reply(state, cid(JOB, "undo3"), {}, at=8.0)
    assert not dispatches(late)


def test_cancel_compensates_what_completed_with_reason_cancelled_then_on_cancel_runs():
    state = make_state(CHAIN)
    _chain_to(state, 2)
    commands = cancel(state)
    assert dispatched_steps(commands) == ["undo2"]
    assert dispatches(commands)[0].body["reason"] == "cancelled"
    sent = _answer_compensations(state, commands)
    assert [d.step for d in sent] == ["undo2", "undo1"]
    job = state.jobs[JOB]
    assert job.status is JobStatus.CANCELLED
    assert job.branch == "on_cancel"


def test_a_retry_is_refused_once_compensation_has_started():
    state = make_state(CHAIN)
    _chain_to(state, 1)
    reply(state, cid(JOB, "s2"), error="boom")
    _answer_compensations(state, dispatches(reply(state, cid(JOB, "undo1"), {})))
    reply(state, cid(JOB, "report"), {})
    answer = refused(retry_job(state))
    assert answer.kind == "conflict"
    assert "compensat" in answer.reason


def test_nothing_to_undo_runs_no_compensation_and_a_retry_is_allowed():
    state = make_state(CHAIN)
    submit(state)
    commands = reply(state, cid(JOB, "s1"), error="boom")
    assert not of_type(commands, JobCompensating)
    assert dispatched_steps(commands) == ["report"]
    reply(state, cid(JOB, "report"), {})
    assert dispatched_steps(retry_job(state)) == ["s1"]


def test_a_workflow_without_compensate_keeps_no_completion_order():
    state = make_state("workflows: [{name: w, steps: [{name: a}]}]")
    submit(state)
    assert state.jobs[JOB].done_order is None


def test_completed_children_are_compensated_newest_first_before_earlier_steps():
    state = make_state(TASKED)
    submit(state, payload={"items": [0, 1, 2, 3, 4]})
    reply(state, cid(JOB, "first"), {"items": ["a", "b", "c", "d", "e"]})
    children = [child_id(JOB, "fan", i) for i in range(5)]
    finish_order = [3, 0, 4, 1, 2]
    for i in finish_order:
        reply(state, cid(children[i], "book"), {"booked": i})
    for i in finish_order:
        reply(state, cid(children[i], "mail"), {"mailed": i})
    assert all(c not in state.jobs for c in children)  # completed children leave memory
    commands = reply(state, cid(JOB, "last"), error="boom")
    sent = _answer_compensations(state, commands)
    expected = []
    for i in reversed(finish_order):
        expected += [(children[i], "unmail"), (children[i], "unbook")]
    expected.append((JOB, "unfirst"))
    assert [(d.job_id, d.step) for d in sent] == expected
    unmail = sent[0]
    assert unmail.correlation_id == f"{children[2]}:unmail"
    assert unmail.body["input"] == {"booked": 2}
    assert unmail.body["output"] == {"mailed": 2}
    assert state.jobs[JOB].is_settled


def _second_child_mailing(state: EngineState) -> list[str]:
    """Two children: the first completed, the second booked and now mailing; their ids."""
    submit(state)
    reply(state, cid(JOB, "first"), {"items": ["a", "b"]})
    children = [child_id(JOB, "fan", i) for i in range(2)]
    reply(state, cid(children[0], "book"), {})
    reply(state, cid(children[0], "mail"), {})
    reply(state, cid(children[1], "book"), {})
    return children


def _newest_child_first(children: list[str]) -> list[tuple[str, str]]:
    return [
        (children[1], "unbook"),
        (children[0], "unmail"),
        (children[0], "unbook"),
        (JOB, "unfirst"),
    ]


def test_children_stopped_with_their_parent_are_compensated_first():
    state = make_state(TASKED)
    children = _second_child_mailing(state)
    sent = _answer_compensations(state, cancel(state))
    assert [(d.job_id, d.step) for d in sent] == _newest_child_first(children)
    assert state.jobs[children[1]].steps["book"].status is StepStatus.COMPENSATED


def test_a_failed_childs_completed_steps_are_undone_with_the_others():
    state = make_state(TASKED)
    children = _second_child_mailing(state)
    commands = reply(state, cid(children[1], "mail"), error="bounced")  # fails its parent
    assert state.jobs[JOB].status is JobStatus.FAILED
    sent = _answer_compensations(state, commands)
    assert [(d.job_id, d.step) for d in sent] == _newest_child_first(children)
    assert sent[0].body["error"]["step"] == "fan"


def test_a_reply_for_a_finished_compensation_is_ignored():
    state = make_state(CHAIN)
    _chain_to(state, 2)
    reply(state, cid(JOB, "s3"), error="boom")
    reply(state, cid(JOB, "undo2"), {})
    again = reply(state, cid(JOB, "undo2"), {})
    assert not dispatches(again)
    assert [c.status for c in state.jobs[JOB].compensation.runs] == [
        StepStatus.COMPLETED,
        StepStatus.RUNNING,
    ]


def test_a_task_steps_own_compensation_runs_after_its_childrens():
    state = make_state(
        TASKED.replace("        task: t\n", "        task: t\n        compensate: {name: unfan}\n")
    )
    submit(state)
    reply(state, cid(JOB, "first"), {"items": ["a"]})
    child = child_id(JOB, "fan", 0)
    reply(state, cid(child, "book"), {})
    reply(state, cid(child, "mail"), {"mailed": 1})
    sent = _answer_compensations(state, reply(state, cid(JOB, "last"), error="boom"))
    assert [d.step for d in sent] == ["unmail", "unbook", "unfan", "unfirst"]
    assert sent[2].body["output"] == {"mailed": 1, "items": [None]}


def test_a_step_recovered_by_its_fallback_is_undone_too():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - {name: s1, fallback: {name: s1-by-hand}, compensate: {name: undo1}}
      - {name: s2, depends: [s1]}
"""
    )
    submit(state)
    reply(state, cid(JOB, "s1"), error="down")
    reply(state, cid(JOB, "s1-by-hand"), {"by": "hand"})
    assert state.jobs[JOB].steps["s1"].status is StepStatus.RECOVERED
    commands = reply(state, cid(JOB, "s2"), error="boom")
    (undo,) = dispatches(commands)
    assert (undo.step, undo.body["output"]) == ("undo1", {"by": "hand"})
    reply(state, cid(JOB, "undo1"), error="cannot")
    assert state.jobs[JOB].steps["s1"].status is StepStatus.RECOVERED  # not undone
