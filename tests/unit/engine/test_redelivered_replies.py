"""A reply the broker delivers again (`redelivered`) after its effect was journaled counts once.

The manager can be killed after committing a worker's failed reply and before its ack leaves;
RabbitMQ then delivers that reply again. A worker that does not echo `x-attempt` sends the
same bytes for every attempt, so only the engine's memory of the reply it counted tells the
copy from the next attempt's failure (`workflow_manager.engine.redelivery`).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.engine.helpers import (
    AT_REPLY,
    JOB,
    assert_ignored,
    cid,
    dispatches,
    fire,
    make_state,
    of_type,
    reply,
    retry_job,
    snapshot,
    submit,
    the_timer,
)
from tests.unit.engine.test_compensation import CHAIN, _chain_to
from workflow_manager.engine import (
    Command,
    EngineState,
    Ignored,
    JobStatus,
    StepReplied,
    StepStatus,
    apply,
    replay,
)
from workflow_manager.engine.redelivery import is_repeat, reply_digest
from workflow_manager.journal import EventKind
from workflow_manager.recorder import record, to_event

# Two attempts in all, as the integration test's `patient` workflow: a second failure fails
# the job, so a copy counted as one would be seen.
ONE_RETRY = """
workflows:
  - name: w
    steps:
      - name: hand
        queue: q-hand
        retries: 1
        retry_backoff: {initial: 2, multiplier: 1, max: 2}
"""
TWO_RETRIES = ONE_RETRY.replace("retries: 1", "retries: 2")
HAND = cid(JOB, "hand")


def _replied(
    body: bytes = b"",
    *,
    error: str | None = "try later",
    attempt: int | None = None,
    redelivered: bool = False,
    meta_patch: str | None = None,
    at: float = AT_REPLY,
    correlation_id: str = HAND,
) -> StepReplied:
    job_id, _, step = correlation_id.partition(":")
    return StepReplied(
        job_id, step, body, at, error=error, attempt=attempt, meta_patch=meta_patch,
        redelivered=redelivered,
    )  # fmt: skip


def _do(state: EngineState, event: StepReplied, log: list[Any] | None = None) -> list[Command]:
    if log is not None:
        log.append(event)
    return apply(state, event)[1]


def _on_attempt_two(text: str = ONE_RETRY) -> EngineState:
    """Attempt 1 failed with `x-error: try later` (no `x-attempt`); attempt 2 is out."""
    state = make_state(text)
    submit(state, "w", {"p": 1})
    due = the_timer(_do(state, _replied()))
    assert [d.attempt for d in dispatches(fire(state, due.key, due.due_at))] == [2]
    return state


@pytest.mark.parametrize("attempt", [None, 1], ids=["no x-attempt", "x-attempt 1"])
@pytest.mark.parametrize("when", ["waiting to retry", "on attempt 2"])
def test_a_redelivered_copy_of_a_counted_failure_is_ignored(attempt, when):
    state = make_state(ONE_RETRY)
    submit(state, "w", {"p": 1})
    due = the_timer(_do(state, _replied(attempt=attempt)))
    if when == "on attempt 2":
        fire(state, due.key, due.due_at)
    before = snapshot(state)
    commands = _do(state, _replied(attempt=attempt, redelivered=True))
    assert_ignored(state, commands, before)
    assert state.jobs[JOB].status is JobStatus.RUNNING


def test_the_job_then_completes_on_attempt_two():
    state = _on_attempt_two()
    _do(state, _replied(redelivered=True))
    done = reply(state, HAND, {"ok": 2})
    job = state.jobs[JOB]
    assert (job.status, job.result) == (JobStatus.COMPLETED, {"ok": 2})
    assert not dispatches(done)


def test_the_same_failure_not_redelivered_is_the_next_attempt_failing():
    state = _on_attempt_two()
    _do(state, _replied())  # attempt 2 fails with the very same reply: it counts
    job = state.jobs[JOB]
    assert job.status is JobStatus.FAILED
    assert job.error == {"step": "hand", "message": "try later"}


def test_a_worker_failing_three_times_alike_uses_every_retry():
    state = _on_attempt_two(TWO_RETRIES)
    due = the_timer(_do(state, _replied()))
    assert state.jobs[JOB].steps["hand"].status is StepStatus.RETRYING
    assert [d.attempt for d in dispatches(fire(state, due.key, due.due_at))] == [3]


@pytest.mark.parametrize(
    "changed",
    [
        {"error": "try much later"},
        {"body": b'{"why": 1}'},
        {"attempt": 2},
        {"meta_patch": '{"k": 1}'},
        {"error": None, "body": b"[]"},  # an invalid body, where attempt 1 sent an x-error
    ],
    ids=["other error", "other body", "x-attempt 2", "x-meta-patch", "invalid body"],
)
def test_a_redelivered_reply_that_differs_from_the_counted_one_counts(changed):
    state = _on_attempt_two()
    _do(state, _replied(redelivered=True, **changed))
    assert state.jobs[JOB].status is JobStatus.FAILED


def test_a_redelivered_reply_never_counted_before_counts():
    """Its first delivery was lost with the manager before it was journaled: it is new."""
    state = make_state(ONE_RETRY)
    submit(state, "w", {"p": 1})
    commands = _do(state, _replied(redelivered=True))
    assert of_type(commands, Ignored) == []
    assert state.jobs[JOB].steps["hand"].status is StepStatus.RETRYING


def test_a_redelivered_good_reply_completes_a_step_no_failure_was_counted_for():
    state = _on_attempt_two()
    _do(state, _replied(b'{"ok": 1}', error=None, redelivered=True))
    assert state.jobs[JOB].status is JobStatus.COMPLETED


def test_a_redelivered_copy_after_a_job_retry_is_still_the_same_message():
    state = _on_attempt_two()
    _do(state, _replied())  # attempt 2 fails: the job fails
    assert [d.attempt for d in dispatches(retry_job(state))] == [3]
    before = snapshot(state)
    assert_ignored(state, _do(state, _replied(redelivered=True)), before)


def test_a_redelivered_copy_of_a_failed_compensation_is_ignored():
    state = make_state(CHAIN)
    _chain_to(state, 3)
    reply(state, cid(JOB, "s4"), error="boom")
    reply(state, cid(JOB, "undo3"), {})
    undo2 = cid(JOB, "undo2")
    # undo2 retries at once (backoff 0): attempt 2 is out when the copy of attempt 1's comes.
    retried = _do(state, _replied(error="refund refused", correlation_id=undo2))
    assert [(d.step, d.attempt) for d in dispatches(retried)] == [("undo2", 2)]
    before = snapshot(state)
    copy = _replied(error="refund refused", redelivered=True, correlation_id=undo2)
    assert_ignored(state, _do(state, copy), before)
    failed = _do(state, _replied(error="refund refused", correlation_id=undo2))
    assert [d.step for d in dispatches(failed)] == ["undo1"]  # the same error, not redelivered


def test_the_journal_keeps_redelivered_so_replay_ignores_the_copy_again():
    state = make_state(ONE_RETRY)
    submit(state, "w", {"p": 1})
    first = _replied()
    first_commands = _do(state, first)
    due = the_timer(first_commands)
    fire(state, due.key, due.due_at)
    copy = _replied(redelivered=True, at=AT_REPLY + 5)
    rows = [
        row
        for event, commands in ((first, first_commands), (copy, _do(state, copy)))
        for row in record(event, commands, "q").batch.events
        if row.kind == EventKind.REPLIED
    ]
    assert [row.meta.get("redelivered") for row in rows] == [None, True]
    assert [to_event(row) for row in rows] == [first, copy]
    assert state.jobs[JOB].steps["hand"].counted_reply == reply_digest(first)


@pytest.mark.parametrize(
    ("event", "counted", "expected"),
    [
        (_replied(redelivered=True), reply_digest(_replied()), True),
        (_replied(), reply_digest(_replied()), False),
        (_replied(redelivered=True), None, False),
        (_replied(redelivered=True, error=""), reply_digest(_replied(error=None)), False),
        (_replied(redelivered=True, at=99.0), reply_digest(_replied()), True),
    ],
    ids=["copy", "not redelivered", "nothing counted", "empty error is not none", "any time"],
)
def test_is_repeat(event, counted, expected):
    assert is_repeat(event, counted) is expected


def test_a_redelivered_reply_changes_nothing_a_replay_from_any_point_would_not():
    log: list[Any] = []
    state = make_state(ONE_RETRY)
    submitted = submit(state, "w", {"p": 1})
    assert dispatches(submitted)
    due = the_timer(_do(state, _replied(), log))
    fired = fire(state, due.key, due.due_at)
    assert dispatches(fired)
    _do(state, _replied(redelivered=True), log)
    _do(state, _replied(b'{"ok": 2}', error=None), log)
    fresh = make_state(ONE_RETRY)
    submit(fresh, "w", {"p": 1})
    apply(fresh, log[0])
    fire(fresh, due.key, due.due_at)
    replay(fresh, log[1:])
    assert fresh == state
    assert fresh.jobs[JOB].status is JobStatus.COMPLETED
