"""Between the engine and the journal: what one event and its commands write, and back.

`record` turns an applied event and its commands into one `Batch` (inbound row first, then
job rows and outbound rows in command order; a child job's row only when it ends). `to_event`
turns a replayable row back into the engine event it came from, so recovery applies exactly
what the live manager applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from manager.engine import (
    CancelRequested,
    Command,
    Dispatch,
    EngineState,
    Event,
    Ignored,
    Job,
    JobFinished,
    JobStarted,
    JobSubmitted,
    NotifyOutcome,
    RetryRequested,
    StepReplied,
    TimerFired,
    canonical_uuid,
    jsontext,
    timers,
)
from manager.engine.replies import split_correlation_id
from manager.engine.snapshot import root_of, snapshot
from manager.journal.records import Batch, EventKind, EventRow, JobRow

__all__ = ["encode_json", "record", "to_event", "notice_msg_id", "outbound_row"]

_HEADER_WORKFLOW = "x-workflow"
_HEADER_ATTEMPT = "x-attempt"
_HEADER_STATUS = "x-status"


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, as every message body is sent and stored."""
    return jsontext.dumps(value)


def notice_msg_id(job_id: str, reply_to: str) -> str:
    """The outbox id of an outcome notice: one per job and destination."""
    return f"notice:{job_id}:{reply_to}"


def _root(state: EngineState, job_id: str | None) -> str | None:
    if not job_id:
        return None
    job = state.jobs.get(job_id)
    if job is not None:
        return root_of(state, job)
    return state.gone.get(job_id)  # a completed child, out of memory (or None: a stray)


def _inbound(state: EngineState, event: Event) -> EventRow:
    if isinstance(event, TimerFired):
        parsed = timers.parse(event.key)
        job_id = parsed.job_id if parsed else None
        return EventRow(
            at=event.at, kind=EventKind.TIMER, job_id=job_id, root_id=_root(state, job_id),
            step=parsed.step if parsed else None, attempt=parsed.attempt if parsed else None,
            meta={"key": event.key},
        )  # fmt: skip
    if isinstance(event, CancelRequested | RetryRequested):
        kind = EventKind.CANCEL if isinstance(event, CancelRequested) else EventKind.RETRY
        job_id = _canonical_key(state, event.job_id)
        return EventRow(
            at=event.at, kind=kind, job_id=job_id, root_id=_root(state, job_id),
            meta={"id": event.job_id},
        )  # fmt: skip
    if isinstance(event, JobSubmitted):
        job = state.jobs.get(_canonical_key(state, event.job_id))
        meta = {"id": event.job_id, "workflow": event.workflow}
        if event.reply_to:
            meta["reply_to"] = event.reply_to
        if event.definition:
            meta["definition"] = event.definition
        return EventRow(
            at=event.at,
            kind=EventKind.SUBMITTED,
            job_id=job.id if job else None,
            root_id=root_of(state, job) if job else None,
            body=encode_json(event.payload),
            meta=meta,
        )
    parts = split_correlation_id(event.correlation_id)
    job_id = parts[0] if parts else None
    meta: dict[str, Any] = {"cid": event.correlation_id}
    if event.error is not None:
        meta["error"] = event.error
    return EventRow(
        at=event.at,
        kind=EventKind.REPLIED,
        job_id=job_id,
        root_id=_root(state, job_id),
        step=parts[1] if parts else None,
        attempt=event.attempt,
        body=event.body,
        meta=meta,
    )


def _canonical_key(state: EngineState, job_id: str) -> str:
    if job_id in state.jobs:
        return job_id
    return canonical_uuid(job_id) or job_id


def _job_row(state: EngineState, job: Job, final: bool) -> JobRow:
    return JobRow(
        id=job.id,
        root_id=root_of(state, job),
        parent_id=job.parent.job_id if job.parent else None,
        workflow=job.workflow.name,
        definition=job.workflow.content_hash,
        flow=job.flow.name,
        status=str(job.status),
        submitted_at=job.submitted_at,
        finished_at=job.finished_at,
        payload=job.payload,
        result=job.result,
        error=job.error,
        snapshot=snapshot(job) if final else None,
    )


def outbound_row(
    at: float,
    kind: str,
    queue: str,
    correlation_id: str,
    body: bytes,
    headers: dict[str, Any],
    msg_id: str | None,
    *,
    reply_to: str | None = None,
    job_id: str | None = None,
    root_id: str | None = None,
    step: str | None = None,
    attempt: int | None = None,
) -> EventRow:
    """A message to publish, with everything needed to publish it again after a crash."""
    meta: dict[str, Any] = {"queue": queue, "cid": correlation_id, "headers": headers}
    if reply_to:
        meta["reply_to"] = reply_to
    return EventRow(
        at=at, kind=kind, job_id=job_id, root_id=root_id, step=step, attempt=attempt,
        body=body, meta=meta, msg_id=msg_id,
    )  # fmt: skip


def _dispatch_row(state: EngineState, at: float, command: Dispatch, reply_queue: str) -> EventRow:
    headers = {_HEADER_WORKFLOW: command.workflow, _HEADER_ATTEMPT: command.attempt}
    return outbound_row(
        at, EventKind.DISPATCHED, command.queue, command.correlation_id,
        encode_json(command.body), headers, command.message_id,
        reply_to=reply_queue, job_id=command.job_id, root_id=_root(state, command.job_id),
        step=command.step, attempt=command.attempt,
    )  # fmt: skip


def _notice_row(state: EngineState, at: float, command: NotifyOutcome) -> EventRow:
    return outbound_row(
        at, EventKind.NOTIFIED, command.reply_to, command.job_id, encode_json(command.body),
        {_HEADER_STATUS: str(command.status)}, notice_msg_id(command.job_id, command.reply_to),
        job_id=command.job_id, root_id=_root(state, command.job_id),
    )  # fmt: skip


def record(
    state: EngineState, event: Event, commands: Iterable[Command], reply_queue: str
) -> tuple[Batch, list[EventRow]]:
    """The batch an applied event writes, and its outbound rows (to publish after the commit)."""
    batch = Batch(events=[_inbound(state, event)])
    outbound: list[EventRow] = []
    at = event.at
    for command in commands:
        if isinstance(command, Dispatch):
            outbound.append(_dispatch_row(state, at, command, reply_queue))
            batch.events.append(outbound[-1])
        elif isinstance(command, NotifyOutcome):
            outbound.append(_notice_row(state, at, command))
            batch.events.append(outbound[-1])
        elif isinstance(command, JobStarted | JobFinished):
            _record_job(state, at, command, batch)
        elif isinstance(command, Ignored):
            meta = {"subject": command.subject, "reason": command.reason}
            batch.events.append(EventRow(at=at, kind=EventKind.IGNORED, meta=meta))
    return batch, outbound


def _record_job(
    state: EngineState, at: float, command: JobStarted | JobFinished, batch: Batch
) -> None:
    job = state.jobs[command.job_id]
    final = isinstance(command, JobFinished)
    if command.parent_id is not None:
        # A child job is written once, when it ends: a fan-out of N children would otherwise
        # cost 3N more rows. Its messages (dispatched, replied) are journaled as any step's,
        # and while it runs it is in memory, where the API reads it.
        if final:
            batch.jobs.append(_job_row(state, job, final))
        return
    batch.jobs.append(_job_row(state, job, final))
    kind = EventKind.FINISHED if final else EventKind.STARTED
    meta: dict[str, Any] = {"status": str(job.status)} if final else {"flow": job.flow.name}
    if final and job.error:
        meta["error"] = job.error
    batch.events.append(
        EventRow(at=at, kind=kind, job_id=job.id, root_id=root_of(state, job), meta=meta)
    )


def to_event(row: EventRow) -> Event:
    """The engine event a replayable row records (see `REPLAYED_KINDS`)."""
    meta = row.meta
    if row.kind == EventKind.SUBMITTED:
        return JobSubmitted(
            job_id=meta["id"],
            workflow=meta["workflow"],
            payload=jsontext.loads(row.body or b"{}"),
            at=row.at,
            reply_to=meta.get("reply_to"),
            definition=meta.get("definition"),
        )
    if row.kind == EventKind.REPLIED:
        return StepReplied(
            correlation_id=meta["cid"],
            body=row.body or b"",
            at=row.at,
            error=meta.get("error"),
            attempt=row.attempt,
        )
    if row.kind == EventKind.TIMER:
        return TimerFired(key=meta["key"], at=row.at)
    if row.kind == EventKind.CANCEL:
        return CancelRequested(job_id=meta["id"], at=row.at)
    if row.kind == EventKind.RETRY:
        return RetryRequested(job_id=meta["id"], at=row.at)
    raise ValueError(f"journal row {row.seq} of kind '{row.kind}' is not an engine event")
