"""Reads of the recent step requests that rate limits count: a rate's window outlives a
restart, and replay brings back running jobs only (a job that ended within the window took a
start too). A function of the read connection; the caller translates errors.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from workflow_manager.journal.codec import EVENT_COLUMNS, decode_event
from workflow_manager.journal.queries import Reads
from workflow_manager.journal.records import EventKind, EventRow

__all__ = ["PAGE", "dispatched_since"]

PAGE = 1000
"""Rows read per page, newest first, walking back from the end of the log."""


async def dispatched_since(conn: Reads, steps: Collection[str], since: float) -> list[EventRow]:
    """The `dispatched` rows of steps named in `steps` at or after `since`, oldest first.

    Rows are written in commit order, so `at` grows with `seq` (give or take a group commit):
    the read walks back from the newest row a page at a time and stops at the first page that
    ends before `since`. It costs the rows of the window, not of the whole log, and needs no
    index of its own.
    """
    if not steps:
        return []
    found: list[tuple[Any, ...]] = []
    before: int | None = None
    while True:
        bound = "" if before is None else " AND seq < ?"
        page = list(
            await conn.execute_fetchall(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE kind = ?{bound}"
                f" ORDER BY seq DESC LIMIT {PAGE}",
                (EventKind.DISPATCHED,) if before is None else (EventKind.DISPATCHED, before),
            )
        )
        found.extend(values for values in page if values[1] >= since and values[5] in steps)
        if len(page) < PAGE or max(values[1] for values in page) < since:
            break
        before = page[-1][0]
    return [decode_event(values) for values in reversed(found)]
