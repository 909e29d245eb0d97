"""Rows to SQL parameters and back: JSON text for dicts, BLOB for bodies, columns in one place.

Every text goes through `storable` on its way in, the same for SQLite and PostgreSQL: NUL and
lone surrogates become U+FFFD in a plain column and escapes in JSON text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workflow_manager.engine import jsontext
from workflow_manager.journal.records import EventRow, JobRow
from workflow_manager.journal.storable import storable_json, storable_optional, storable_text

__all__ = [
    "EVENT_COLUMNS",
    "MSG_ID_INDEX",
    "JOB_COLUMNS",
    "encode_event",
    "encode_job",
    "encode_sent",
    "decode_event",
    "decode_job",
]

EVENT_COLUMNS = "seq, at, kind, job_id, root_id, step, attempt, body, meta, msg_id, sent_at"
JOB_COLUMNS = (
    "id, root_id, parent_id, workflow, definition, flow, status, submitted_at, finished_at,"
    " payload, result, error, snapshot"
)
_EMPTY_META = "{}"
# Where `encode_event` puts the row's msg_id.
MSG_ID_INDEX = 8


def _dumps_optional(value: Any) -> str | None:
    return None if value is None else storable_json(value)


def _loads_optional(text: str | None) -> Any:
    return None if text is None else jsontext.loads(text)


def encode_event(row: EventRow) -> tuple[Any, ...]:
    """Parameters for inserting `row`; its seq is left for SQLite to assign."""
    meta = storable_json(row.meta) if row.meta else _EMPTY_META
    if row.attempt is not None and not -(2**63) <= row.attempt < 2**63:
        # SQLite would raise OverflowError inside the writer: refuse this batch alone instead.
        raise ValueError(f"attempt {row.attempt} does not fit a SQLite integer")
    return (
        row.at,
        storable_text(row.kind),
        storable_optional(row.job_id),
        storable_optional(row.root_id),
        storable_optional(row.step),
        row.attempt,
        row.body,
        meta,
        storable_optional(row.msg_id),
        row.sent_at,
    )


def encode_job(row: JobRow) -> tuple[Any, ...]:
    """Parameters for upserting `row`."""
    return (
        storable_text(row.id),
        storable_text(row.root_id),
        storable_optional(row.parent_id),
        storable_text(row.workflow),
        storable_text(row.definition),
        storable_text(row.flow),
        storable_text(row.status),
        row.submitted_at,
        row.finished_at,
        storable_json(row.payload),
        _dumps_optional(row.result),
        _dumps_optional(row.error),
        _dumps_optional(row.snapshot),
    )


def encode_sent(msg_id: str, sent_at: float) -> tuple[float, str]:
    """Parameters for marking the row of `msg_id` sent (its id as `encode_event` wrote it)."""
    return sent_at, storable_text(msg_id)


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
