"""Between the engine and the journal: what an applied event writes and sends, and back.

`record` turns an event and its commands into one journal `Batch` (the inbound row first,
then job rows and outbound rows in command order; a child job's row only when it ends) and
the messages to publish. It reads the commands alone, never the engine's state: each command
carries what its rows need. `to_event` turns a replayable row back into the engine event it
came from, and `pending_message` a journaled outbound row back into its message (both in
`workflow_manager.recovered`, re-exported here), so recovery applies and sends exactly what
the live manager did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from workflow_manager.engine import (
    BulkProgress,
    BulkRequested,
    BulkSlice,
    CancelRequested,
    Command,
    Dispatch,
    Event,
    ForkSeed,
    Ignored,
    JobDebounced,
    JobDuplicate,
    JobFinished,
    JobForked,
    JobQueued,
    JobRejected,
    JobScheduled,
    JobStarted,
    JobSubmitted,
    NotifyOutcome,
    PauseRequested,
    Refused,
    RetryRequested,
    ScheduleFired,
    ScheduleKnown,
    SchedulePauseSet,
    SignalReceived,
    StepReplied,
    StepWaiting,
    Subject,
    TimerFired,
    jsontext,
    outcome_body,
    timers,
)
from workflow_manager.engine.bulk import bulk_journal_id
from workflow_manager.engine.traceids import step_span_id, traceparent
from workflow_manager.jobrows import job_rows
from workflow_manager.journal import Batch, EventKind, EventRow, JobRow
from workflow_manager.notices import debounced_answer, duplicate_answer, rejection_notice

# Rows back into what they record; here too, for the stages that read both ways.
from workflow_manager.recovered import pending_message, to_event
from workflow_manager.transport.message import (
    Outbound,
    outcome_notice,
    step_request,
)

__all__ = [
    "Record",
    "record",
    "to_event",
    "pending_message",
    "finished_notice",
    "schedule_journal_id",
    "fired_journal_id",
    "since_journal_id",
    "ReplyQueue",
    "fork_json",
    "forks_journal_id",
]

# The queue replies come back on; partitioned, a function of (top-level job id, its partition).
ReplyQueue = str | Callable[[str, int | None], str]


@dataclass(slots=True)
class Record:
    """What one applied event writes (`batch`) and sends (`outbound`, after or during the commit).

    `rejected` / `refused` hold the engine's refusal, if it refused the event: then nothing is
    journaled. `ended` holds the rows of jobs that ended, to serve reads until they are committed.
    `fired`: the job a schedule's firing started, if it started one.
    `debounced`: the debounce window a trigger joined (it is journaled, under that job).
    """

    batch: Batch = field(default_factory=Batch)
    outbound: list[Outbound] = field(default_factory=list)
    rejected: JobRejected | None = None
    refused: Refused | None = None
    duplicate: JobDuplicate | None = None
    debounced: JobDebounced | None = None  # journaled: the trigger joined a debounce window
    ended: list[JobRow] = field(default_factory=list)
    fired: ScheduleFired | None = None


def record(event: Event, commands: Iterable[Command], reply_queue: ReplyQueue) -> Record:
    """The journal batch and the outbound messages of an applied event, from its commands.

    `reply_queue` names the queue replies come back on, or (partitioned) is a function of the
    top-level job's id and its partition that names it. The batch and its job rows carry the
    partition of the event's job tree (its `Subject`'s).
    """
    result = Record()
    events, outbound = result.batch.events, result.outbound
    at = event.at
    for command in commands:
        if isinstance(command, Subject):
            result.batch.partition = command.partition
            if command.event is not None:
                events.append(_inbound(command.event, command))  # a bulk slice's job
            elif not isinstance(event, BulkSlice):  # its progress row records a slice
                events.append(_inbound(event, command))
        elif isinstance(command, Dispatch):
            row, message = _dispatch(at, command, reply_queue)
            events.append(row)
            outbound.append(message)
        elif isinstance(command, NotifyOutcome):
            row, message = _notice(
                at, command.reply_to, command.job_id, command.root_id, command.status, command.body
            )
            events.append(row)
            outbound.append(message)
        elif isinstance(command, JobStarted | JobScheduled | JobQueued | JobFinished | StepWaiting):
            job_rows(command, result.batch, result.ended)
        elif isinstance(command, Ignored):
            meta = {"subject": command.subject, "reason": command.reason}
            events.append(EventRow(at=at, kind=EventKind.IGNORED, meta=meta))
        elif (row_of := _ROWS.get(type(command))) is not None:
            events.append(row_of(command))
        elif isinstance(command, ScheduleFired):
            result.fired = command
            events.append(_fired_row(command))
        elif isinstance(command, JobRejected | Refused | JobDuplicate | JobDebounced):
            _refusal(command, result)
    return result


def _rows() -> dict[type, Callable[[Any], EventRow]]:
    """The commands that each write one row of their own, and how."""
    return {
        SchedulePauseSet: _schedule_row, ScheduleKnown: _known_row, JobForked: _forked_row,
        BulkProgress: _bulk_row,
    }  # fmt: skip


def schedule_journal_id(workflow: str, schedule: str) -> str:
    """Where a schedule's pause and resume rows are filed in the journal (their job_id)."""
    return f"schedule:{workflow}/{schedule}"


def fired_journal_id(workflow: str, schedule: str) -> str:
    """Where the rows of the jobs a schedule's firings started are filed (their job_id)."""
    return f"{schedule_journal_id(workflow, schedule)}:fired"


def _fired_row(command: ScheduleFired) -> EventRow:
    """The record of the job a firing started: the schedule's last job, after a restart too."""
    job_id = fired_journal_id(command.workflow, command.schedule)
    meta = {"job": command.job_id}
    return EventRow(at=command.at, kind=EventKind.FIRED, job_id=job_id, meta=meta)


def since_journal_id(workflow: str, schedule: str) -> str:
    """Where the row saying since when a schedule exists is filed (its job_id)."""
    return f"{schedule_journal_id(workflow, schedule)}:since"


def _known_row(command: ScheduleKnown) -> EventRow:
    """The replayed row of a schedule served for the first time (kind `schedule`, so that
    retention keeps it; filed apart from the pause rows)."""
    meta = {"workflow": command.workflow, "schedule": command.schedule, "since": True}
    job_id = since_journal_id(command.workflow, command.schedule)
    return EventRow(at=command.at, kind=EventKind.SCHEDULE, job_id=job_id, meta=meta)


def _schedule_row(command: SchedulePauseSet) -> EventRow:
    """The replayed row of a schedule paused or resumed."""
    meta = {"workflow": command.workflow, "schedule": command.schedule, "paused": command.paused}
    job_id = schedule_journal_id(command.workflow, command.schedule)
    return EventRow(at=command.at, kind=EventKind.SCHEDULE, job_id=job_id, meta=meta)


def _refusal(command: JobRejected | Refused | JobDuplicate | JobDebounced, result: Record) -> None:
    """An event the engine did not take (nothing is journaled), or a trigger it answered
    debounced (journaled, under the window's job); a trigger's sender is told."""
    if isinstance(command, JobDebounced):
        result.debounced = command
        if command.reply_to:
            result.outbound.append(debounced_answer(command, command.reply_to))
        return
    if isinstance(command, JobRejected):
        result.rejected = command
        if command.reply_to:
            notice = rejection_notice(command.reply_to, command.job_id, command.reason)
            result.outbound.append(notice)
    elif isinstance(command, Refused):
        result.refused = command
    else:
        result.duplicate = command
        if command.reply_to:
            result.outbound.append(duplicate_answer(command, command.reply_to))


def finished_notice(row: JobRow, reply_to: str, at: float) -> tuple[Batch, Outbound]:
    """The outcome notice of a job that ended and left memory, for a trigger naming it again:
    its batch (in the job's partition) and message."""
    body = outcome_body(row.status, row.result, row.error)
    entry, notice = _notice(at, reply_to, row.id, row.root_id, row.status, body)
    return Batch(events=[entry], partition=row.partition), notice


def _inbound(event: Event, subject: Subject) -> EventRow:
    job_id, root_id = subject.job_id, subject.root_id
    if isinstance(event, StepReplied):
        meta: dict[str, Any] = {} if event.error is None else {"error": event.error}
        if event.meta_patch is not None:
            meta["meta_patch"] = event.meta_patch
        if event.redelivered:
            # Replay must see it too: the engine ignores a redelivered copy of a counted reply.
            meta["redelivered"] = True
        return EventRow(
            at=event.at, kind=EventKind.REPLIED, job_id=event.job_id, root_id=root_id,
            step=event.step, attempt=event.attempt, body=event.body, meta=meta,
        )  # fmt: skip
    if isinstance(event, JobSubmitted):
        return EventRow(
            at=event.at, kind=EventKind.SUBMITTED, job_id=job_id, root_id=root_id,
            body=jsontext.dumps(event.payload), meta=_submission(event),
        )  # fmt: skip
    if isinstance(event, TimerFired):
        step, attempt = _timer_step(event.key)
        return EventRow(
            at=event.at, kind=EventKind.TIMER, job_id=job_id, root_id=root_id, step=step,
            attempt=attempt, meta={"key": event.key},
        )  # fmt: skip
    if isinstance(event, SignalReceived):
        return EventRow(
            at=event.at, kind=EventKind.SIGNAL, job_id=job_id, root_id=root_id, step=event.step,
            body=jsontext.dumps(event.payload), meta={"id": event.job_id},
        )  # fmt: skip
    if isinstance(event, CancelRequested | RetryRequested):
        kind = EventKind.CANCEL if isinstance(event, CancelRequested) else EventKind.RETRY
        meta = {"id": event.job_id}
        return EventRow(at=event.at, kind=kind, job_id=job_id, root_id=root_id, meta=meta)
    if isinstance(event, PauseRequested):
        meta = {"id": event.job_id, "paused": event.paused}
        return EventRow(
            at=event.at, kind=EventKind.PAUSE, job_id=job_id, root_id=root_id, meta=meta
        )
    if isinstance(event, BulkRequested):
        meta = {"id": event.bulk_id, "action": event.action, "total": len(event.job_ids)}
        meta.update((k, v) for k, v in (("params", event.params), ("filter", event.filter)) if v)
        return EventRow(
            at=event.at, kind=EventKind.BULK, job_id=job_id, root_id=root_id,
            body=jsontext.dumps(list(event.job_ids)), meta=meta,
        )  # fmt: skip
    raise TypeError(f"{type(event).__name__} is not journaled")


def _submission(event: JobSubmitted) -> dict[str, Any]:
    """What a submission row keeps besides the payload: only what was given."""
    meta: dict[str, Any] = {"id": event.job_id, "workflow": event.workflow}
    optional = {
        "reply_to": event.reply_to or None,
        "definition": event.definition or None,
        "trace": event.trace_id or None,
        "trace_parent": event.trace_parent or None,
        "not_before": event.not_before,
        "priority": event.priority or None,
        "meta": event.meta,
        "schedule": event.schedule,
        "partition": event.partition,
        "fork": fork_json(event.fork) if event.fork is not None else None,
    }
    meta.update((key, value) for key, value in optional.items() if value is not None)
    return meta


def fork_json(seed: ForkSeed) -> dict[str, Any]:
    """A fork's seed as the JSON its submission row keeps (`recovered.fork_seed` reads it)."""
    data: dict[str, Any] = {
        "source": seed.source,
        "step": seed.step,
        "status": seed.status,
        "steps": {name: [status, output] for name, (status, output) in seed.steps.items()},
        "children": seed.children,
    }
    if seed.input is not None:
        data["input"] = seed.input
    if seed.recorded_input is not None:
        data["recorded_input"] = seed.recorded_input
    if seed.reused:
        data["reused"] = [[c.index, c.job_id, c.digest, c.result] for c in seed.reused]
    return data


def _bulk_row(command: BulkProgress) -> EventRow:
    """A bulk's progress after a slice (replayed while it is under way; the latest row is
    where it stands)."""
    key = bulk_journal_id(command.bulk_id)
    meta = {
        "id": command.bulk_id, "action": command.action, "start": command.start,
        "count": command.count, "done": command.done, "total": command.total,
        "changed": command.changed, "refused": command.refused,
        "errors": [list(error) for error in command.errors], "finished": command.finished,
    }  # fmt: skip
    return EventRow(at=command.at, kind=EventKind.BULK_STEP, job_id=key, root_id=key, meta=meta)


def _forked_row(command: JobForked) -> EventRow:
    """The record of a fork, filed under its source: the source lists its forks from these."""
    meta = {"job": command.job_id, "step": command.step, "reused": command.reused}
    return EventRow(
        at=command.at, kind=EventKind.FORKED, job_id=forks_journal_id(command.source),
        root_id=command.job_id, meta=meta,
    )  # fmt: skip


def forks_journal_id(source: str) -> str:
    """Where the rows of the forks of job `source` are filed (their job_id): one per fork,
    deleted with the fork (its root_id)."""
    return f"forks:{source}"


def _timer_step(key: str) -> tuple[str | None, int | None]:
    parsed = timers.parse(key)
    return (parsed.step, parsed.attempt) if parsed else (None, None)


def _dispatch(at: float, command: Dispatch, reply_queue: ReplyQueue) -> tuple[EventRow, Outbound]:
    body = jsontext.dumps(command.body)
    if not isinstance(reply_queue, str):
        reply_queue = reply_queue(command.root_id, command.partition)
    trace = None
    if command.trace_id:
        span = step_span_id(command.job_id, command.step, command.attempt)
        trace = traceparent(command.trace_id, span)
    message = step_request(
        command.queue, body, command.correlation_id, reply_queue, command.workflow,
        command.attempt, command.message_id, trace, command.priority, command.meta,
    )  # fmt: skip
    row = EventRow(
        at=at, kind=EventKind.DISPATCHED, job_id=command.job_id, root_id=command.root_id,
        step=command.step, attempt=command.attempt, body=body, meta=_stored(message),
        msg_id=message.message_id,
    )  # fmt: skip
    return row, message


def _notice(
    at: float, reply_to: str, job_id: str, root_id: str, status: str, body: dict[str, Any]
) -> tuple[EventRow, Outbound]:
    message = outcome_notice(
        reply_to, job_id, str(status), jsontext.dumps(body), f"notice:{job_id}:{reply_to}"
    )
    row = EventRow(
        at=at, kind=EventKind.NOTIFIED, job_id=job_id, root_id=root_id, body=message.body,
        meta=_stored(message), msg_id=message.message_id,
    )  # fmt: skip
    return row, message


def _stored(message: Outbound) -> dict[str, Any]:
    """How the journal keeps an outbound message's addressing (read back by `pending_message`)."""
    meta: dict[str, Any] = {
        "queue": message.queue, "cid": message.correlation_id, "headers": dict(message.headers)
    }  # fmt: skip
    if message.reply_to:
        meta["reply_to"] = message.reply_to
    if message.priority:
        meta["priority"] = message.priority
    return meta


_ROWS = _rows()
