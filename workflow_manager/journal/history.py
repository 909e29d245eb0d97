"""Reads for browsing jobs (the web UI's lists): a parent's children, the latest jobs, and
what finished lately. Each is a function of the read connection; the caller translates errors.

Every list is bounded by its `limit` or by one parent's children, so a page costs what it shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from workflow_manager.journal.queries import Reads

__all__ = ["ChildRow", "JobListing", "children", "recent_jobs", "running_jobs", "finished_since"]


@dataclass(frozen=True, slots=True)
class ChildRow:
    """A started child job, as the children page shows it."""

    id: str
    task: str
    status: str
    submitted_at: float
    finished_at: float | None
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class JobListing:
    """A top-level job, as a list of jobs shows it."""

    id: str
    workflow: str
    status: str
    submitted_at: float
    finished_at: float | None


async def children(conn: Reads, parent_id: str) -> dict[str, ChildRow]:
    """Every started child of `parent_id` by id (the parent's own list gives their order)."""
    rows = await conn.execute_fetchall(
        "SELECT id, flow, status, submitted_at, finished_at, error FROM jobs WHERE parent_id = ?",
        (parent_id,),
    )
    return {
        id_: ChildRow(id_, task, status, submitted, finished, _object(error))
        for id_, task, status, submitted, finished, error in rows
    }


async def recent_jobs(
    conn: Reads,
    *,
    workflow: str | None,
    status: str | None,
    id_prefix: str | None,
    before: float | None,
    limit: int,
) -> list[JobListing]:
    """Top-level jobs, newest first, submitted before `before`, matching every filter given."""
    where = ["parent_id IS NULL"]
    params: list[Any] = []
    if workflow is not None:
        where.append("workflow = ?")
        params.append(workflow)
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if id_prefix:
        # A range on the primary key rather than LIKE, which would scan every row.
        where.append("id >= ? AND id < ?")
        params += [id_prefix, id_prefix + "\U0010ffff"]
    if before is not None:
        where.append("submitted_at < ?")
        params.append(before)
    rows = await conn.execute_fetchall(
        "SELECT id, workflow, status, submitted_at, finished_at FROM jobs"
        f" WHERE {' AND '.join(where)} ORDER BY submitted_at DESC, id DESC LIMIT ?",
        (*params, limit),
    )
    return [JobListing(*row) for row in rows]


async def running_jobs(conn: Reads) -> list[JobListing]:
    """Every running top-level job, oldest first (the index `jobs_running` covers it)."""
    rows = await conn.execute_fetchall(
        "SELECT id, workflow, status, submitted_at, finished_at FROM jobs"
        " WHERE status = 'running' AND parent_id IS NULL ORDER BY submitted_at, id"
    )
    return [JobListing(*row) for row in rows]


async def finished_since(conn: Reads, since: float) -> list[tuple[str, str, float]]:
    """(workflow, status, seconds it ran) of every top-level job that finished since `since`."""
    rows = await conn.execute_fetchall(
        "SELECT workflow, status, finished_at - submitted_at FROM jobs"
        " WHERE parent_id IS NULL AND finished_at >= ? AND status != 'running'",
        (since,),
    )
    return [(workflow, status, seconds) for workflow, status, seconds in rows]


def _object(text: str | None) -> dict[str, Any] | None:
    return None if text is None else json.loads(text)
