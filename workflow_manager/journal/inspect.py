"""Journal rows as text for `workflow-manager journal JOB_ID`: one aligned line per row."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from workflow_manager.journal.records import EventRow
from workflow_manager.textline import body_preview

__all__ = ["format_events", "BODY_PREVIEW_CHARS"]

BODY_PREVIEW_CHARS = 120
_SHORT_ID_CHARS = 8
_MISSING = "-"


def _time(at: float) -> str:
    stamp = datetime.fromtimestamp(at, tz=UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _short(value: str | None) -> str:
    return _MISSING if value is None else value[:_SHORT_ID_CHARS]


def _step(row: EventRow) -> str:
    if row.step is None:
        return _MISSING
    return row.step if row.attempt is None else f"{row.step}#{row.attempt}"


def _message(row: EventRow) -> str:
    if row.msg_id is None:
        return _MISSING
    state = "PENDING" if row.sent_at is None else "sent"
    return f"msg={_short(row.msg_id)} {state}"


def _preview(body: bytes | None) -> str:
    return _MISSING if body is None else body_preview(body, BODY_PREVIEW_CHARS)


def _meta(row: EventRow) -> str:
    if not row.meta:
        return ""
    return json.dumps(row.meta, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def format_events(rows: Sequence[EventRow]) -> str:
    """One line per row: seq, UTC time, kind, job, step#attempt, message state, body, meta."""
    columns = [
        (str(row.seq), _time(row.at), row.kind, _short(row.job_id), _step(row), _message(row))
        for row in rows
    ]
    if not columns:
        return ""
    widths = [max(len(values[i]) for values in columns) for i in range(len(columns[0]))]
    lines = []
    for row, values in zip(rows, columns, strict=True):
        seq, *rest = values
        cells = [seq.rjust(widths[0])] + [v.ljust(w) for v, w in zip(rest, widths[1:], strict=True)]
        cells.append(_preview(row.body))
        meta = _meta(row)
        if meta:
            cells.append(meta)
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
