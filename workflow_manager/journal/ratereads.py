"""Reads of the recent starts that rate limits count (step requests; top-level jobs, for a
workflow's rate): a rate's window outlives a restart, and replay brings back running jobs only
(a job that ended within the window took a start too). Functions of the read connection; the
caller translates errors.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from workflow_manager.journal.codec import EVENT_COLUMNS, decode_event
from workflow_manager.journal.queries import Reads
from workflow_manager.journal.records import EventKind, EventRow

__all__ = ["CHUNK", "PAGE", "dispatched_since", "job_starts_since"]

PAGE = 1000
"""Rows read per page, newest first, walking back from the end of the log."""
CHUNK = 500
"""Job ids looked up per query (their submissions, their earlier starts)."""


async def dispatched_since(conn: Reads, steps: Collection[str], since: float) -> list[EventRow]:
    """The `dispatched` rows of steps named in `steps` at or after `since`, oldest first (read
    as `_rows_since` reads)."""
    if not steps:
        return []
    return await _rows_since(conn, EventKind.DISPATCHED, since, lambda values: values[5] in steps)


async def job_starts_since(conn: Reads, since: float) -> list[tuple[float, EventRow]]:
    """The first starts of top-level jobs at or after `since`, oldest first: when each job
    started, and its `submitted` row (its workflow, payload and metadata). A job whose first
    start lies before `since` (a retry started it again) is left out, as is one without a
    submission row (its start is of no workflow a rate can name)."""
    first: dict[str, float] = {}
    for row in await _rows_since(conn, EventKind.STARTED, since, lambda values: True):
        if row.job_id is not None:
            first.setdefault(row.job_id, row.at)
    ids = list(first)
    earlier: set[str] = set()
    submitted: dict[str, EventRow] = {}
    for i in range(0, len(ids), CHUNK):
        chunk = ids[i : i + CHUNK]
        marks = ", ".join("?" * len(chunk))
        rows = await conn.execute_fetchall(
            f"SELECT job_id FROM events WHERE kind = ? AND at < ? AND job_id IN ({marks})",
            (EventKind.STARTED, since, *chunk),
        )
        earlier.update(job_id for (job_id,) in rows)
        rows = await conn.execute_fetchall(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE kind = ? AND job_id IN ({marks})"
            " ORDER BY seq",
            (EventKind.SUBMITTED, *chunk),
        )
        for values in rows:
            row = decode_event(values)
            if row.job_id is not None:
                submitted.setdefault(row.job_id, row)
    return [
        (at, submitted[job_id])
        for job_id, at in first.items()
        if job_id not in earlier and job_id in submitted
    ]


async def _rows_since(
    conn: Reads, kind: str, since: float, keep: Callable[[tuple[Any, ...]], bool]
) -> list[EventRow]:
    """The rows of `kind` at or after `since` that `keep` keeps, oldest first.

    Rows are written in commit order, so `at` grows with `seq` (give or take a group commit):
    the read walks back from the newest row a page at a time and stops at the first page that
    ends before `since`. It costs the rows of the window, not of the whole log, and needs no
    index of its own.
    """
    found: list[tuple[Any, ...]] = []
    before: int | None = None
    while True:
        bound = "" if before is None else " AND seq < ?"
        page = list(
            await conn.execute_fetchall(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE kind = ?{bound}"
                f" ORDER BY seq DESC LIMIT {PAGE}",
                (kind,) if before is None else (kind, before),
            )
        )
        found.extend(values for values in page if values[1] >= since and keep(values))
        if len(page) < PAGE or max(values[1] for values in page) < since:
            break
        before = page[-1][0]
    return [decode_event(values) for values in reversed(found)]
