"""The journal's reads, each a function of a read connection (`Reads`: an aiosqlite connection,
or the PostgreSQL journal's pool); the caller translates errors. The SQL is written once, with
`?` placeholders, in the dialect SQLite and PostgreSQL share.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from workflow_manager.engine import jsontext
from workflow_manager.journal.codec import EVENT_COLUMNS, JOB_COLUMNS, decode_event, decode_job
from workflow_manager.journal.records import REPLAYED_KINDS, EventRow, JobRow

__all__ = [
    "Reads",
    "definitions",
    "running_roots",
    "replay_rows",
    "schedule_rows",
    "latest_row",
    "pending_outbound",
    "job",
    "JOB_BY_ID",
    "tree_of",
    "workflow_jobs",
    "events_of",
    "job_outcomes",
    "IN_CHUNK",
]

# Ids per `IN (...)` list: well under SQLite's 32,766 bound parameters, and each chunk's
# result is small enough to sort in memory.
IN_CHUNK = 500
FINISHED_STATUSES = ("completed", "failed", "cancelled")
_KINDS = ", ".join(f"'{kind}'" for kind in REPLAYED_KINDS)


class Reads(Protocol):
    """Where the reads run: `execute_fetchall` as aiosqlite's connection has it."""

    async def execute_fetchall(
        self, sql: str, parameters: Iterable[Any] | None = None
    ) -> Iterable[Any]:
        """Run `sql` with `parameters` (`?` placeholders); every row, as a sequence of values."""
        ...


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), IN_CHUNK):
        yield ids[start : start + IN_CHUNK]


def _marks(count: int) -> str:
    return ", ".join("?" * count)


async def definitions(
    conn: Reads, hashes: Iterable[str] | None
) -> dict[str, tuple[str, str]]:
    """content hash -> (workflow name, definition JSON), for `hashes` or every one stored."""
    sql = "SELECT hash, workflow, definition FROM definitions"
    if hashes is None:
        rows = await conn.execute_fetchall(sql)
        return {hash_: (name, text) for hash_, name, text in rows}
    found: dict[str, tuple[str, str]] = {}
    for chunk in _chunks(sorted(set(hashes))):
        rows = await conn.execute_fetchall(f"{sql} WHERE hash IN ({_marks(len(chunk))})", chunk)
        found.update((hash_, (name, text)) for hash_, name, text in rows)
    return found


async def job_outcomes(
    conn: Reads, ids: Sequence[str]
) -> dict[str, tuple[str, Any, dict[str, Any] | None]]:
    """job id -> (status, payload, result) of those of `ids` with a row (one primary key lookup
    each, in chunks): what a fork needs of its source's children."""
    found: dict[str, tuple[str, Any, dict[str, Any] | None]] = {}
    for chunk in _chunks(list(ids)):
        rows = await conn.execute_fetchall(
            f"SELECT id, status, payload, result FROM jobs WHERE id IN ({_marks(len(chunk))})",
            chunk,
        )
        for id_, status, payload, result in rows:
            found[id_] = (status, jsontext.loads(payload), _loads(result))
    return found


def _loads(text: str | bytes | None) -> Any:
    return None if text is None else jsontext.loads(text)


async def running_roots(conn: Reads) -> list[str]:
    """Ids of unfinished top-level jobs (running, or waiting to start), oldest first."""
    # Not `status = 'running'`: a job that waits to start (scheduled) is recovered too, and
    # every unfinished job, whatever its status, has no finished_at (an index covers it).
    rows = await conn.execute_fetchall(
        "SELECT id FROM jobs WHERE parent_id IS NULL AND finished_at IS NULL"
        " ORDER BY submitted_at, id"
    )
    return [id_ for (id_,) in rows]


async def replay_rows(conn: Reads, root_ids: Sequence[str]) -> list[EventRow]:
    """The replayed rows (submissions, replies) of the trees under `root_ids`, in seq order."""
    rows: list[tuple[Any, ...]] = []
    for chunk in _chunks(sorted(set(root_ids))):
        rows.extend(
            await conn.execute_fetchall(
                f"SELECT {EVENT_COLUMNS} FROM events"
                f" WHERE root_id IN ({_marks(len(chunk))}) AND kind IN ({_KINDS})",
                chunk,
            )
        )
    # One sort of every chunk's rows: cheaper than an ORDER BY per chunk and a merge.
    rows.sort(key=lambda values: values[0])
    return [decode_event(values) for values in rows]


async def schedule_rows(conn: Reads, journal_ids: Sequence[str]) -> list[EventRow]:
    """The latest pause/resume row of each schedule filed under `journal_ids`, in seq order."""
    rows: list[tuple[Any, ...]] = []
    for journal_id in journal_ids:  # one index lookup each (events_job): a few schedules
        rows.extend(
            await conn.execute_fetchall(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE job_id = ? AND kind = 'schedule'"
                " ORDER BY seq DESC LIMIT 1",
                (journal_id,),
            )
        )
    rows.sort(key=lambda values: values[0])
    return [decode_event(values) for values in rows]


async def latest_row(conn: Reads, job_id: str) -> EventRow | None:
    """The latest row filed under `job_id` (one index lookup: events_job), or None."""
    rows = await conn.execute_fetchall(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE job_id = ? ORDER BY seq DESC LIMIT 1",
        (job_id,),
    )
    row = next(iter(rows), None)
    return decode_event(row) if row is not None else None


async def pending_outbound(conn: Reads) -> list[EventRow]:
    """Outbound rows not yet marked sent, in seq order: recovery publishes them again."""
    rows = await conn.execute_fetchall(
        f"SELECT {EVENT_COLUMNS} FROM events"
        " WHERE sent_at IS NULL AND msg_id IS NOT NULL ORDER BY seq"
    )
    return [decode_event(values) for values in rows]


JOB_BY_ID = f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?"

# A job's top-level job, from its own row, else (a running child has no row until it ends)
# from the latest row filed under it: one round trip for both.
TREE_OF = (
    "SELECT root_id, 0 AS k FROM jobs WHERE id = ?"
    " UNION ALL"
    " SELECT root_id, 1 FROM"
    " (SELECT root_id FROM events WHERE job_id = ? ORDER BY seq DESC LIMIT 1) AS latest"
    " ORDER BY k LIMIT 1"
)


async def tree_of(conn: Reads, job_id: str) -> tuple[str, int | None] | None:
    """The top-level job of job `job_id` (its tree placed by that job's id: a SQLite journal
    is never partitioned), or None when the journal knows no such job."""
    rows = list(await conn.execute_fetchall(TREE_OF, (job_id, job_id)))
    root_id = rows[0][0] if rows else None
    return None if root_id is None else (root_id, None)


async def job(conn: Reads, job_id: str) -> JobRow | None:
    """The job row of `job_id`, or None."""
    rows = await conn.execute_fetchall(JOB_BY_ID, (job_id,))
    row = next(iter(rows), None)
    return decode_job(row) if row is not None else None


async def workflow_jobs(
    conn: Reads, name: str, finished_since: float
) -> dict[str, list[str]]:
    """Top-level jobs of workflow `name` by status: running ones, and those finished since then."""
    rows = await conn.execute_fetchall(
        "SELECT id, status FROM jobs"
        " WHERE workflow = ? AND parent_id IS NULL"
        " AND (finished_at IS NULL OR finished_at >= ?)"
        " ORDER BY submitted_at, id",
        (name, finished_since),
    )
    buckets: dict[str, list[str]] = {
        "running": [], "queued": [], **{status: [] for status in FINISHED_STATUSES}
    }  # fmt: skip
    for id_, status in rows:
        buckets.setdefault(status, []).append(id_)
    return buckets


async def events_of(conn: Reads, job_id: str, tree: bool) -> list[EventRow]:
    """Rows of `job_id` in seq order; with `tree`, also those of every job below it."""
    if not tree:
        rows = await conn.execute_fetchall(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE job_id = ? ORDER BY seq", (job_id,)
        )
        return [decode_event(values) for values in rows]
    found = await conn.execute_fetchall(
        "SELECT root_id, parent_id FROM jobs WHERE id = ?", (job_id,)
    )
    root_id, parent_id = next(iter(found), (job_id, None))
    rows = await conn.execute_fetchall(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE root_id = ? OR job_id = ? ORDER BY seq",
        (root_id, job_id),
    )
    events = [decode_event(values) for values in rows]
    if parent_id is None:
        return events
    below = await _subtree(conn, root_id, job_id)
    return [row for row in events if row.job_id in below]


async def _subtree(conn: Reads, root_id: str, job_id: str) -> set[str]:
    """`job_id` and every job below it, found through the parent links of its tree."""
    children: dict[str, list[str]] = {}
    for id_, parent_id in await conn.execute_fetchall(
        "SELECT id, parent_id FROM jobs WHERE root_id = ?", (root_id,)
    ):
        children.setdefault(parent_id, []).append(id_)
    found = {job_id}
    todo = deque([job_id])
    while todo:
        for child in children.get(todo.popleft(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
