"""Reads for bulk actions: the ended top-level jobs a filter matches, and the bulks still under
way (which recovery replays). Each is a function of the read connection; the caller
translates errors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workflow_manager.journal.queries import Reads, latest_row
from workflow_manager.journal.records import EventKind

__all__ = ["EndedJob", "ended_jobs", "bulks_under_way", "BULK_PREFIX"]

BULK_PREFIX = "bulk:"
"""A bulk's rows are filed under `bulk:<id>` (`workflow_manager.engine.bulk.bulk_journal_id`)."""
# The ids just after every `bulk:...` one: ';' follows ':'. A range on events_job, not LIKE.
_BULK_END = "bulk;"
ENDED = ("completed", "failed", "cancelled")


@dataclass(frozen=True, slots=True)
class EndedJob:
    """An ended top-level job as a bulk's filter sees it."""

    id: str
    workflow: str
    status: str
    submitted_at: float
    meta: dict[str, Any] | None


async def ended_jobs(
    conn: Reads,
    *,
    workflow: str | None,
    statuses: Sequence[str],
    submitted_after: float | None,
    submitted_before: float | None,
    id_prefix: str | None,
    with_meta: bool,
    limit: int,
) -> list[EndedJob]:
    """The ended top-level jobs matching every filter given, oldest first, at most `limit`.

    `statuses`: those of completed, failed and cancelled wanted. `with_meta`: read each job's
    metadata from its snapshot (for a filter on it), else None.
    """
    wanted = [status for status in statuses if status in ENDED]
    if not wanted:
        return []
    where = ["parent_id IS NULL", f"status IN ({', '.join('?' * len(wanted))})"]
    params: list[Any] = list(wanted)
    if workflow is not None:
        where.append("workflow = ?")
        params.append(workflow)
    if id_prefix:
        where.append("id >= ? AND id < ?")
        params += [id_prefix, id_prefix + "\U0010ffff"]
    if submitted_after is not None:
        where.append("submitted_at >= ?")
        params.append(submitted_after)
    if submitted_before is not None:
        where.append("submitted_at < ?")
        params.append(submitted_before)
    snapshot = "snapshot" if with_meta else "NULL"
    rows = await conn.execute_fetchall(
        f"SELECT id, workflow, status, submitted_at, {snapshot} FROM jobs"
        f" WHERE {' AND '.join(where)} ORDER BY submitted_at, id LIMIT ?",
        (*params, limit),
    )
    return [
        EndedJob(id_, wf, status, submitted, _meta(text))
        for id_, wf, status, submitted, text in rows
    ]


def _meta(snapshot: str | None) -> dict[str, Any] | None:
    if snapshot is None:
        return None
    meta = json.loads(snapshot).get("meta")
    return meta if isinstance(meta, dict) else None


async def bulks_under_way(conn: Reads) -> list[str]:
    """The journal ids (`bulk:<id>`) of the bulks whose latest row does not say finished."""
    rows = await conn.execute_fetchall(
        "SELECT job_id FROM events WHERE job_id >= ? AND job_id < ? AND kind = ?",
        (BULK_PREFIX, _BULK_END, EventKind.BULK),
    )
    under_way = []
    for (key,) in rows:
        latest = await latest_row(conn, key)
        if latest is not None and not latest.meta.get("finished"):
            under_way.append(key)
    return under_way
