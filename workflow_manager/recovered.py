"""Journal rows back into what they record, for recovery: the engine event of a replayable
row (`to_event`) and the message of a journaled outbound row (`pending_message`).

The other direction is `workflow_manager.recorder`, which writes these rows: a replay applies
and sends exactly what the live manager did.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import (
    BulkProgressed,
    BulkRequested,
    CancelRequested,
    Event,
    ForkSeed,
    JobSubmitted,
    PauseRequested,
    RetryRequested,
    ReusedChild,
    SchedulePaused,
    ScheduleSeen,
    SignalReceived,
    StepReplied,
    TimerFired,
    jsontext,
)
from workflow_manager.journal import EventKind, EventRow
from workflow_manager.transport.message import Outbound

__all__ = ["to_event", "pending_message", "fork_seed"]


def fork_seed(data: dict[str, Any]) -> ForkSeed:
    """A fork's seed from the JSON its submission row keeps (`recorder.fork_json`)."""
    return ForkSeed(
        source=data["source"],
        step=data["step"],
        status=data["status"],
        steps={name: (status, output) for name, (status, output) in data["steps"].items()},
        input=data.get("input"),
        recorded_input=data.get("recorded_input"),
        children=data.get("children", "failed"),
        reused=tuple(ReusedChild(*entry) for entry in data.get("reused", ())),
    )


def pending_message(row: EventRow) -> Outbound:
    """The message a journaled outbound row holds, to publish again."""
    meta = row.meta
    return Outbound(
        queue=meta["queue"],
        body=row.body or b"",
        correlation_id=meta.get("cid"),
        reply_to=meta.get("reply_to"),
        headers=meta.get("headers") or {},
        message_id=row.msg_id,
        step_request=row.kind == EventKind.DISPATCHED,
        priority=meta.get("priority", 0),
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
            # None in a journal from before jobs had traces: the engine derives one.
            trace_id=meta.get("trace"),
            trace_parent=meta.get("trace_parent"),
            not_before=meta.get("not_before"),
            priority=meta.get("priority", 0),
            meta=meta.get("meta"),
            schedule=meta.get("schedule"),
            partition=meta.get("partition"),
            fork=fork_seed(meta["fork"]) if meta.get("fork") else None,
        )
    if row.kind == EventKind.REPLIED and row.job_id and row.step:
        return StepReplied(
            job_id=row.job_id,
            step=row.step,
            body=row.body or b"",
            at=row.at,
            error=meta.get("error"),
            attempt=row.attempt,
            meta_patch=meta.get("meta_patch"),
            redelivered=bool(meta.get("redelivered")),
        )
    if row.kind == EventKind.TIMER:
        return TimerFired(key=meta["key"], at=row.at)
    if row.kind == EventKind.BULK:
        return BulkRequested(
            bulk_id=meta["id"], action=meta["action"],
            job_ids=tuple(jsontext.loads(row.body or b"[]")), at=row.at,
            params=meta.get("params"), filter=meta.get("filter"),
        )  # fmt: skip
    if row.kind == EventKind.BULK_STEP:
        return BulkProgressed(
            bulk_id=meta["id"], start=meta["start"], count=meta["count"],
            changed=meta["changed"], refused=meta["refused"],
            errors=tuple((job, reason) for job, reason in meta.get("errors", ())), at=row.at,
        )  # fmt: skip
    if row.kind == EventKind.CANCEL:
        return CancelRequested(job_id=meta["id"], at=row.at)
    if row.kind == EventKind.RETRY:
        return RetryRequested(job_id=meta["id"], at=row.at)
    if row.kind == EventKind.PAUSE:
        return PauseRequested(job_id=meta["id"], paused=bool(meta.get("paused")), at=row.at)
    if row.kind == EventKind.SIGNAL and row.step:
        payload = jsontext.loads(row.body or b"{}")
        return SignalReceived(job_id=meta["id"], step=row.step, payload=payload, at=row.at)
    if row.kind == EventKind.SCHEDULE and meta.get("since"):
        return ScheduleSeen(workflow=meta["workflow"], schedule=meta["schedule"], at=row.at)
    if row.kind == EventKind.SCHEDULE and row.job_id:
        # Rows from before they named their schedule in meta: the job_id does.
        workflow, _, schedule = row.job_id.removeprefix("schedule:").partition("/")
        return SchedulePaused(
            workflow=meta.get("workflow", workflow),
            schedule=meta.get("schedule", schedule),
            paused=bool(meta.get("paused")),
            at=row.at,
        )
    raise ValueError(f"journal row {row.seq} of kind '{row.kind}' is not an engine event")
