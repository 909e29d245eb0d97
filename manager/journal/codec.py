"""Rows to SQL parameters and back: JSON text for dicts, BLOB for bodies, columns in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from manager.engine import jsontext
from manager.journal.records import EventRow, JobRow

__all__ = [
    "EVENT_COLUMNS",
    "JOB_COLUMNS",
    "encode_event",
    "encode_job",
    "decode_event",
    "decode_job",
]

EVENT_COLUMNS = "seq, at, kind, job_id, root_id, step, attempt, body, meta, msg_id, sent_at"
JOB_COLUMNS = (
    "id, root_id, parent_id, workflow, definition, flow, status, submitted_at, finished_at,"
    " payload, result, error, snapshot"
)
_EMPTY_META = "{}"


def _dumps_optional(value: Any) -> str | None:
    return None if value is None else jsontext.dumps_text(value)


def _loads_optional(text: str | None) -> Any:
    return None if text is None else jsontext.loads(text)


def encode_event(row: EventRow) -> tuple[Any, ...]:
    """Parameters for inserting `row`; its seq is left for SQLite to assign."""
    meta = jsontext.dumps_text(row.meta) if row.meta else _EMPTY_META
    if row.attempt is not None and not -(2**63) <= row.attempt < 2**63:
        # SQLite would raise OverflowError inside the writer: refuse this batch alone instead.
        raise ValueError(f"attempt {row.attempt} does not fit a SQLite integer")
    return (
        row.at,
        row.kind,
        row.job_id,
        row.root_id,
        row.step,
        row.attempt,
        row.body,
        meta,
        row.msg_id,
        row.sent_at,
    )


def encode_job(row: JobRow) -> tuple[Any, ...]:
    """Parameters for upserting `row`."""
    return (
        row.id,
        row.root_id,
        row.parent_id,
        row.workflow,
        row.definition,
        row.flow,
        row.status,
        row.submitted_at,
        row.finished_at,
        jsontext.dumps_text(row.payload),
        _dumps_optional(row.result),
        _dumps_optional(row.error),
        _dumps_optional(row.snapshot),
    )


def decode_event(values: Sequence[Any]) -> EventRow:
    """An `EventRow` from a row selected with `EVENT_COLUMNS`."""
    seq, at, kind, job_id, root_id, step, attempt, body, meta, msg_id, sent_at = values
    return EventRow(
        at=at,
        kind=kind,
        job_id=job_id,
        root_id=root_id,
        step=step,
        attempt=attempt,
        body=body,
        # Most rows carry no meta: skip the JSON parser for them (replay reads many rows).
        meta={} if meta is None or meta == _EMPTY_META else jsontext.loads(meta),
        msg_id=msg_id,
        seq=seq,
        sent_at=sent_at,
    )


def decode_job(values: Sequence[Any]) -> JobRow:
    """A `JobRow` from a row selected with `JOB_COLUMNS`."""
    (
        id_,
        root_id,
        parent_id,
        workflow,
        definition,
        flow,
        status,
        submitted_at,
        finished_at,
        payload,
        result,
        error,
        snapshot,
    ) = values
    return JobRow(
        id=id_,
        root_id=root_id,
        parent_id=parent_id,
        workflow=workflow,
        definition=definition,
        flow=flow,
        status=status,
        submitted_at=submitted_at,
        finished_at=finished_at,
        payload=jsontext.loads(payload),
        result=_loads_optional(result),
        error=_loads_optional(error),
        snapshot=_loads_optional(snapshot),
    )
