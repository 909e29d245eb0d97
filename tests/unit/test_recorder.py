"""The recorder: commands to journal rows and messages, and rows back to events and messages."""

from __future__ import annotations

import json

from tests.unit.engine.helpers import JOB, workflows
from workflow_manager.engine import (
    EngineState,
    JobArchived,
    JobSubmitted,
    StepReplied,
    TimerFired,
    apply,
    replay,
    timers,
)
from workflow_manager.engine.traceids import step_span_id
from workflow_manager.journal import JobRow
from workflow_manager.journal.records import REPLAYED_KINDS, EventKind
from workflow_manager.notices import rejection_notice
from workflow_manager.recorder import finished_notice, pending_message, record, to_event

FLOW = """
workflows:
  - name: w
    steps:
      - name: split
      - {name: fan, task: t, depends: [split]}
      - {name: done, depends: [fan], queue: finish}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""
STRAY = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"


def _run_live():
    """Run a job live, recording every batch as the orchestrator does."""
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    rows, outbound = [], []

    def feed(event):
        _, commands = apply(state, event)
        result = record(event, commands, "wm")
        rows.extend(result.batch.events)
        outbound.extend(result.outbound)
        return commands

    feed(
        JobSubmitted(JOB, "w", {"p": 1}, 1.0, reply_to="answers", definition=defs["w"].content_hash)
    )
    feed(StepReplied(JOB, "split", b'{"items": ["a", "b"]}', 2.0, attempt=1))
    children = state.jobs[JOB].steps["fan"].children
    feed(StepReplied(children[1], "work", b'{"item": 2}', 3.0))
    feed(StepReplied(children[1], "work", b'{"dup": 1}', 3.5))  # ignored duplicate
    feed(StepReplied(STRAY, "work", b"{}", 3.6))  # stray
    feed(StepReplied(children[0], "work", b'{"item": 1}', 4.0))
    return defs, state, rows, outbound


def test_replaying_the_recorded_rows_rebuilds_the_live_state():
    defs, live, rows, _ = _run_live()
    replayed = replay(
        EngineState.from_workflows(defs), (to_event(r) for r in rows if r.kind in REPLAYED_KINDS)
    )
    assert replayed == live


def test_outbound_messages_are_what_the_protocol_says_and_come_back_from_their_rows():
    _, _, rows, outbound = _run_live()
    first = outbound[0]
    assert (first.queue, first.correlation_id, first.reply_to) == ("split", f"{JOB}:split", "wm")
    span = step_span_id(JOB, "split", 1)
    traceparent = f"00-{JOB.replace('-', '')}-{span}-01"
    assert dict(first.headers) == {"x-workflow": "w", "x-attempt": 1, "traceparent": traceparent}
    assert first.message_id == f"{JOB}:split:1" and first.step_request
    assert json.loads(first.body) == {"p": 1}
    last = outbound[-1]
    assert (last.queue, last.correlation_id) == ("finish", f"{JOB}:done")
    assert json.loads(last.body) == {"items": [1, 2]}
    # Every journaled message reads back from its row exactly as it was sent.
    stored = [r for r in rows if r.msg_id is not None]
    assert [pending_message(r) for r in stored] == [m for m in outbound if m.message_id]


def test_a_priority_is_journaled_with_the_submission_and_rides_on_its_requests():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    submitted = JobSubmitted(JOB, "w", {}, 1.0, definition=defs["w"].content_hash, priority=8)
    result = record(submitted, apply(state, submitted)[1], "wm")
    (request,) = result.outbound
    assert request.priority == 8
    rows = result.batch.events
    assert to_event(rows[0]) == submitted
    (stored,) = [r for r in rows if r.msg_id is not None]
    assert pending_message(stored) == request


def test_a_queued_job_gets_a_queued_row_and_its_start_timer_is_filed_under_it():
    limit = "  - name: w\n    concurrency: {limit: 1}\n"
    limited = workflows(FLOW.replace("  - name: w\n", limit, 1))
    state = EngineState.from_workflows(limited)
    submitted = JobSubmitted(JOB, "w", {}, 1.0, definition=limited["w"].content_hash)
    result = record(submitted, apply(state, submitted)[1], "wm")
    (row,) = result.batch.jobs
    assert (row.id, row.status, row.finished_at) == (JOB, "queued", None)
    (queued,) = [r for r in result.batch.events if r.kind == EventKind.QUEUED]
    assert queued.meta == {"scopes": ["workflow:w:null"], "priority": 0}
    assert not result.outbound
    fired = TimerFired(f"admit:{JOB}", 1.5)
    result = record(fired, apply(state, fired)[1], "wm")
    timer_row = result.batch.events[0]
    assert (timer_row.kind, timer_row.root_id) == (EventKind.TIMER, JOB)
    assert [job.status for job in result.batch.jobs] == ["running"]
    assert [m.queue for m in result.outbound] == ["split"]


def test_rows_carry_the_root_job_for_child_traffic_and_none_for_strays():
    _, _, rows, _ = _run_live()
    replies = [r for r in rows if r.kind == EventKind.REPLIED]
    assert all(r.root_id == JOB for r in replies if r.job_id != STRAY)
    assert next(r for r in replies if r.job_id == STRAY).root_id is None
    assert all(r.step for r in replies)
    ignored = [r for r in rows if r.kind == EventKind.IGNORED]
    assert len(ignored) == 2 and all(r.meta["reason"] for r in ignored)


def test_job_rows_start_running_and_end_with_a_snapshot():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    event = JobSubmitted(JOB, "w", {}, 1.0)
    _, commands = apply(state, event)
    batch = record(event, commands, "wm").batch
    assert [(j.id, j.status, j.snapshot) for j in batch.jobs] == [(JOB, "running", None)]
    event = StepReplied(JOB, "split", b"", 2.0, error="bad")
    _, commands = apply(state, event)
    result = record(event, commands, "wm")
    (job,) = result.batch.jobs
    assert job.status == "failed" and job.snapshot["status"] == "failed"
    assert job.error == {"step": "split", "message": "bad"}
    assert result.ended == [job]
    # The record came from the commands alone: the job can leave memory, the row stays right.
    apply(state, JobArchived(JOB, 3.0))
    assert JOB not in state.jobs and job.snapshot["id"] == JOB


def test_a_child_job_is_written_once_when_it_ends():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    apply(state, JobSubmitted(JOB, "w", {}, 1.0))
    event = StepReplied(JOB, "split", b'{"items": ["a", "b"]}', 2.0, attempt=1)
    _, commands = apply(state, event)
    result = record(event, commands, "wm")
    children = state.jobs[JOB].steps["fan"].children
    # The fan-out writes the children's requests, but no job rows or started rows for them.
    assert result.batch.jobs == []
    kinds = [r.kind for r in result.batch.events]
    assert kinds == [EventKind.REPLIED] + [EventKind.DISPATCHED] * 2
    assert [m.correlation_id for m in result.outbound] == [f"{c}:work" for c in children]
    event = StepReplied(children[0], "work", b'{"item": 1}', 3.0)
    _, commands = apply(state, event)
    batch = record(event, commands, "wm").batch
    (row,) = batch.jobs
    assert (row.id, row.parent_id, row.root_id, row.status) == (children[0], JOB, JOB, "completed")
    assert row.snapshot["status"] == "completed" and row.result == {"item": 1}
    assert [r.kind for r in batch.events] == [EventKind.REPLIED]
    assert children[0] not in state.jobs  # it left memory as it completed


def test_a_childs_waiting_step_is_journaled_naming_its_top_level_job():
    gated = workflows(FLOW.replace("- name: work", "- {name: work, wait: true}"))
    state = EngineState.from_workflows(gated)
    submitted = JobSubmitted(JOB, "w", {}, 1.0)
    record(submitted, apply(state, submitted)[1], "wm")
    event = StepReplied(JOB, "split", b'{"items": ["a", "b"]}', 2.0, attempt=1)
    batch = record(event, apply(state, event)[1], "wm").batch
    children = state.jobs[JOB].steps["fan"].children
    # Nothing else of the children is journaled yet: these rows place them (in JOB's tree).
    waiting = [r for r in batch.events if r.kind == EventKind.WAITING]
    assert [(r.job_id, r.root_id, r.step) for r in waiting] == [(c, JOB, "work") for c in children]
    assert EventKind.WAITING not in REPLAYED_KINDS


def test_a_top_level_jobs_waiting_step_writes_no_row():
    gated = workflows(FLOW.replace("      - name: split\n", "      - {name: split, wait: true}\n"))
    state = EngineState.from_workflows(gated)
    submitted = JobSubmitted(JOB, "w", {}, 1.0)
    batch = record(submitted, apply(state, submitted)[1], "wm").batch
    assert state.jobs[JOB].steps["split"].status == "waiting"
    assert EventKind.WAITING not in [r.kind for r in batch.events]  # its job row places it


def test_a_rejected_submission_writes_nothing_and_answers_its_sender():
    state = EngineState.from_workflows(workflows(FLOW))
    event = JobSubmitted("not-a-uuid", "w", {}, 1.0, reply_to="answers")
    _, commands = apply(state, event)
    result = record(event, commands, "wm")
    assert not result.batch and result.rejected is not None
    (answer,) = result.outbound
    assert (answer.queue, answer.message_id) == ("answers", None)
    assert dict(answer.headers) == {"x-status": "rejected"}
    assert json.loads(answer.body) == {"error": result.rejected.reason}
    assert answer == rejection_notice("answers", "not-a-uuid", result.rejected.reason)


def test_a_finished_jobs_notice_is_journaled_with_its_outcome_in_its_partition():
    error = {"step": "s", "message": "m"}
    row = JobRow(JOB, JOB, None, "w", "hash", "w", "failed", 1.0, 2.0, {}, error=error, partition=3)
    batch, notice = finished_notice(row, "answers", 5.0)
    (entry,) = batch.events
    assert batch.partition == 3  # the fence checks the job's partition, not its id's
    assert (entry.kind, entry.msg_id, entry.root_id) == (EventKind.NOTIFIED, notice.message_id, JOB)
    assert json.loads(notice.body) == {"error": {"step": "s", "message": "m"}}
    assert dict(notice.headers) == {"x-status": "failed"}
    assert pending_message(entry) == notice


def test_a_delayed_job_is_written_scheduled_and_its_start_replays():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    submitted = JobSubmitted(JOB, "w", {"p": 1}, 1.0, not_before=4.0)
    _, commands = apply(state, submitted)
    batch = record(submitted, commands, "wm").batch
    assert [(j.id, j.status, j.finished_at) for j in batch.jobs] == [(JOB, "scheduled", None)]
    made = next(r for r in batch.events if r.kind == EventKind.SCHEDULED)
    assert made.meta == {"start_at": 4.0}
    (inbound,) = [r for r in batch.events if r.kind == EventKind.SUBMITTED]
    assert to_event(inbound) == submitted
    fired = TimerFired(timers.job_start(JOB), 4.0)
    _, commands = apply(state, fired)
    batch = record(fired, commands, "wm").batch
    assert [(j.id, j.status) for j in batch.jobs] == [(JOB, "running")]
    assert [m.queue for m in record(fired, commands, "wm").outbound] == ["split"]


def test_meta_is_journaled_with_the_submission_and_its_patches_with_the_replies():
    defs = workflows(FLOW)
    state = EngineState.from_workflows(defs)
    submitted = JobSubmitted(JOB, "w", {}, 1.0, definition=defs["w"].content_hash, meta={"t": 1})
    result = record(submitted, apply(state, submitted)[1], "wm")
    (request,) = result.outbound
    assert json.loads(request.headers["x-meta"]) == {"t": 1}
    assert to_event(result.batch.events[0]) == submitted
    (stored,) = [r for r in result.batch.events if r.msg_id is not None]
    assert pending_message(stored) == request
    replied = StepReplied(JOB, "split", b'{"items": []}', 2.0, meta_patch='{"u": 2}')
    result = record(replied, apply(state, replied)[1], "wm")
    assert to_event(result.batch.events[0]) == replied
    (request,) = result.outbound
    assert json.loads(request.headers["x-meta"]) == {"t": 1, "u": 2}
