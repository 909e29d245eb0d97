"""RetryRequested: a failed job runs again from where it failed; other jobs are refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.unit.engine.helpers import (
    JOB,
    NOT_A_JOB,
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
    snapshot,
    submit,
    the_timer,
    timers_started,
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
    steps:
      - name: a
      - name: b
        depends: [a]
      - name: c
        retries: 2
        retry_backoff: {initial: 1, max: 1}
      - name: fan
        task: t
        depends: [a]
      - name: end
        depends: [b, c, fan]
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
KIDS = [child_id(JOB, "fan", i) for i in range(4)]


def _failed_fan() -> EngineState:
    """JOB failed at `fan` (kid 1 failed), its on_error branch over.

    Kid 0 had completed, kid 3 had finished `leaf`; kids 2 and 3 were cancelled; b and c
    were still running.
    """
    state = make_state(FLOW)
    submit(state, "w", {"p": 1}, reply_to="q1", at=1.0)
    reply(state, cid(JOB, "a"), {"items": [0, 1, 2, 3], "x": 1}, at=2.0)
    reply(state, cid(KIDS[0], "leaf"), {}, at=3.0)
    reply(state, cid(KIDS[0], "tail"), {"item": "k0", "from": "first run"}, at=3.0)
    reply(state, cid(KIDS[3], "leaf"), {"half": True}, at=3.0)
    reply(state, cid(KIDS[1], "leaf"), error="bad element", at=4.0)
    reply(state, cid(JOB, "report"), {}, at=5.0)
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED and job.is_settled
    assert KIDS[0] not in state.jobs  # completed: out of memory, its result kept by the parent
    assert [state.jobs[k].status for k in KIDS[1:]] == ["failed"] + ["cancelled"] * 2
    return state


def test_a_retried_job_runs_again_and_keeps_what_it_had_done():
    state = _failed_fan()
    commands = retry_job(state, at=10.0)

    job = state.jobs[JOB]
    assert job.status is JobStatus.RUNNING
    assert (job.error, job.result, job.finished_at) == (None, None, None)
    assert [(c.job_id, c.parent_id, c.at) for c in of_type(commands, JobStarted)] == [
        (JOB, None, 10.0),
        (KIDS[1], JOB, 10.0),
        (KIDS[2], JOB, 10.0),
        (KIDS[3], JOB, 10.0),
    ]
    sent = {(d.job_id, d.step, d.attempt) for d in dispatches(commands)}
    assert sent == {
        (JOB, "b", 2),
        (JOB, "c", 2),
        (KIDS[1], "leaf", 2),
        (KIDS[2], "leaf", 2),
        (KIDS[3], "tail", 2),
    }
    assert [d.body for d in dispatches(commands) if d.job_id == KIDS[3]] == [{"half": True}]
    assert of_type(commands, JobFinished) == []
    assert "report" not in job.steps  # the branch that ran is history
    assert job.steps["a"].output == {"items": [0, 1, 2, 3], "x": 1}
    assert job.steps["fan"].status is StepStatus.RUNNING
    assert KIDS[0] not in state.jobs  # completed: out of memory, its result kept by the parent
    assert list(timers_started(commands).values()) == [110.0]  # the job's deadline, anew


def test_a_retried_job_completes_with_the_outputs_kept_from_before():
    state = _failed_fan()
    retry_job(state, at=10.0)
    reply(state, cid(KIDS[1], "leaf"), {}, at=11.0)
    reply(state, cid(KIDS[1], "tail"), {"item": "k1"}, at=11.0)
    reply(state, cid(KIDS[2], "leaf"), {}, at=11.0)
    reply(state, cid(KIDS[2], "tail"), {"item": "k2"}, at=11.0)
    reply(state, cid(KIDS[3], "tail"), {"item": "k3"}, at=11.0)
    reply(state, cid(JOB, "b"), {"b": 1}, at=12.0)
    commands = reply(state, cid(JOB, "c"), {"c": 1}, at=12.0)
    (end,) = dispatches(commands)
    assert end.body == {
        "b": 1,
        "c": 1,
        "from": "first run",
        "items": ["k0", "k1", "k2", "k3"],
    }
    commands = reply(state, cid(JOB, "end"), {"done": True}, at=13.0)
    assert finished(commands).status == JobStatus.COMPLETED
    assert of_type(commands, NotifyOutcome) == [
        NotifyOutcome("q1", JOB, JOB, "completed", {"done": True})
    ]
    assert dispatched_steps(commands) == []  # on_error does not run for a completed job
    assert state.timers == {}


def test_attempt_numbers_keep_counting_across_a_retry():
    state = make_state(FLOW)
    submit(state, "w", {"p": 1}, at=1.0)
    at = 2.0
    for _ in range(2):
        timer = the_timer(reply(state, cid(JOB, "c"), error="down", at=at))
        at = timer.due_at
        fire(state, timer.key, at)
    reply(state, cid(JOB, "c"), error="down", at=at)
    assert state.jobs[JOB].steps["c"].attempt == 3
    reply(state, cid(JOB, "report"), {}, at=at)
    commands = retry_job(state, at=50.0)
    assert {(d.step, d.attempt) for d in dispatches(commands)} == {("a", 2), ("c", 4)}
    assert [d.message_id for d in dispatches(commands) if d.step == "c"] == [f"{JOB}:c:4"]


def test_a_job_can_fail_and_be_retried_again():
    state = make_state(FLOW)
    submit(state, "w", {"p": 1}, at=1.0)
    for round_ in range(1, 4):
        commands = reply(state, cid(JOB, "a"), error=f"round {round_}", at=10.0 * round_)
        assert dispatched_steps(commands) == ["report"]
        assert dispatches(commands)[0].body["error"]["attempts"] == round_
        finished(reply(state, cid(JOB, "report"), {}, at=10.0 * round_ + 1))
        commands = retry_job(state, at=10.0 * round_ + 2)
        assert {(d.step, d.attempt) for d in dispatches(commands)} == {
            ("a", round_ + 1),
            ("c", round_ + 1),
        }


def test_a_job_that_timed_out_can_be_retried():
    state = make_state(FLOW)
    deadline = the_timer(submit(state, "w", {"p": 1}, at=1.0))
    reply(state, cid(JOB, "a"), {"items": []}, at=2.0)
    fire(state, deadline.key, deadline.due_at)
    reply(state, cid(JOB, "report"), {}, at=102.0)
    commands = retry_job(state, at=200.0)
    assert {(d.step, d.attempt) for d in dispatches(commands)} == {("b", 2), ("c", 2)}
    assert state.jobs[JOB].steps["fan"].status is StepStatus.COMPLETED  # no children: done
    assert list(timers_started(commands).values()) == [300.0]


BRANCH_TASK = """
workflows:
  - name: w
    steps:
      - name: a
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
    on_error:
      - name: each
        task: t
"""


def test_an_on_error_task_step_runs_again_after_a_retry_fails_again():
    state = make_state(BRANCH_TASK)
    submit(state, "w", {"items": ["x", "y"]})
    branch_kids = [child_id(JOB, "each", i) for i in range(2)]
    for round_ in range(2):
        commands = reply(state, cid(JOB, "a"), error="boom")
        assert [c.job_id for c in of_type(commands, JobStarted)] == branch_kids
        for kid in branch_kids:
            commands = reply(state, cid(kid, "leaf"), {"item": round_})
        assert finished(commands).status == JobStatus.FAILED
        assert state.jobs[JOB].steps["each"].output == {"items": [round_, round_]}
        retry_job(state)


# -- refused -----------------------------------------------------------------------------


def _running(state: EngineState) -> None:
    submit(state, "w", {"p": 1})
    reply(state, cid(JOB, "a"), {"items": [0]})


def _completed(state: EngineState) -> None:
    _running(state)
    for job_id, step in [(KIDS[0], "leaf"), (KIDS[0], "tail"), (JOB, "b"), (JOB, "c")]:
        reply(state, cid(job_id, step), {})
    reply(state, cid(JOB, "end"), {})
    assert state.jobs[JOB].status is JobStatus.COMPLETED


def _cancelled(state: EngineState) -> None:
    _running(state)
    cancel(state)


def _failing(state: EngineState) -> None:
    """Failed, its on_error branch still running."""
    _running(state)
    reply(state, cid(KIDS[0], "leaf"), error="bad")
    assert state.jobs[JOB].status is JobStatus.FAILED and not state.jobs[JOB].is_settled


def _failed(state: EngineState) -> None:
    _failing(state)
    reply(state, cid(JOB, "report"), {})


REFUSALS: list[tuple[str, Callable[[EngineState], None], str, str, tuple[str, ...]]] = [
    ("running", _running, JOB, "conflict", (JOB, "running")),
    ("completed", _completed, JOB, "conflict", (JOB, "completed")),
    ("cancelled", _cancelled, JOB, "conflict", (JOB, "cancelled")),
    ("branch running", _failing, JOB, "conflict", (JOB, "on_error")),
    ("unknown", _failed, NOT_A_JOB, "not-found", (NOT_A_JOB,)),
    ("failed child", _failed, KIDS[0], "conflict", (KIDS[0], JOB)),
    ("running child", _running, KIDS[0], "conflict", (KIDS[0], JOB)),
]


@pytest.mark.parametrize(
    ("setup", "job_id", "kind", "named"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_retry_is_refused_unless_the_job_has_failed_and_settled(setup, job_id, kind, named):
    state = make_state(FLOW)
    setup(state)
    before = snapshot(state)
    answer = refused(retry_job(state, job_id, at=50.0))
    assert (answer.action, answer.kind) == ("retry", kind)
    assert answer.job_id == job_id
    for name in named:
        assert name in answer.reason
    assert state == before


def test_retry_by_upper_case_id():
    state = make_state(FLOW)
    _failed(state)
    commands = retry_job(state, JOB.upper())
    assert [c.job_id for c in of_type(commands, JobStarted)] == [JOB, KIDS[0]]


ROUNDS = """
workflows:
  - name: w
    steps:
      - name: s
        retries: 1
        retry_backoff: {initial: 1, max: 1}
"""


def test_a_job_retry_gives_each_failed_step_a_fresh_round_of_retries():
    state = make_state(ROUNDS)
    submit(state, "w", {})
    commands = reply(state, cid(JOB, "s"), {}, error="one")
    fire(state, the_timer(commands).key, 10.0)
    reply(state, cid(JOB, "s"), {}, error="two")  # attempt 2: the round's retries are spent
    assert state.jobs[JOB].status is JobStatus.FAILED
    (again,) = dispatches(retry_job(state))
    assert again.attempt == 3  # attempt numbers keep counting up...
    commands = reply(state, cid(JOB, "s"), {}, error="three")
    timer = the_timer(commands)  # ...and the new round may retry once more
    assert state.jobs[JOB].steps["s"].status is StepStatus.RETRYING
    (last,) = dispatches(fire(state, timer.key, 20.0))
    assert last.attempt == 4
    reply(state, cid(JOB, "s"), {}, error="four")
    assert state.jobs[JOB].status is JobStatus.FAILED
