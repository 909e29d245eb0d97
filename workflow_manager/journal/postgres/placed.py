"""The partition each job tree was placed in, in PostgreSQL's `jobs.partition` (a partitioned
manager's; NULL: by its top-level job's id, as in a journal from before keys placed jobs).

Written with every job row (`job_values`, `UPSERT_JOB`); read so that recovery, a take-over
and the fence know a running tree's partition without replaying it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from workflow_manager.journal.codec import JOB_COLUMNS, decode_job, encode_job
from workflow_manager.journal.postgres.reads import pg_sql
from workflow_manager.journal.queries import Reads
from workflow_manager.journal.records import JobRow
from workflow_manager.journal.statements import UPSERT_JOB as _SHARED_UPSERT_JOB

__all__ = ["UPSERT_JOB", "job_values", "placements", "placed_job", "placed_tree"]

# The shared upsert with the partition as a last column (never updated: a tree stays put).
UPSERT_JOB = pg_sql(
    _SHARED_UPSERT_JOB.replace(
        " snapshot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        " snapshot, partition) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
)
assert UPSERT_JOB.count("%s") == 14, "statements.UPSERT_JOB changed: update this one too"


def job_values(row: JobRow) -> tuple[Any, ...]:
    """Parameters for upserting `row` with its partition (`UPSERT_JOB`)."""
    return (*encode_job(row), row.partition)


async def placements(conn: Reads, root_ids: Sequence[str]) -> dict[str, int]:
    """root id -> the partition its tree was placed in, for those of `root_ids` placed so."""
    if not root_ids:
        return {}
    rows = await conn.execute_fetchall(
        "SELECT id, partition FROM jobs WHERE id = ANY(?) AND partition IS NOT NULL",
        [list(root_ids)],
    )
    return {id_: int(partition) for id_, partition in rows}


async def placed_job(conn: Reads, job_id: str) -> JobRow | None:
    """The job row of `job_id` with its partition, or None."""
    rows = list(
        await conn.execute_fetchall(
            f"SELECT {JOB_COLUMNS}, partition FROM jobs WHERE id = ?", (job_id,)
        )
    )
    if not rows:
        return None
    *values, partition = rows[0]
    return dataclasses.replace(decode_job(values), partition=partition)


# queries.TREE_OF with the partition of the tree: the job's own row's, or its root's.
_PLACED_TREE = (
    "SELECT root_id, partition, 0 AS k FROM jobs WHERE id = ?"
    " UNION ALL"
    " SELECT latest.root_id, roots.partition, 1 FROM"
    " (SELECT root_id FROM events WHERE job_id = ? ORDER BY seq DESC LIMIT 1) AS latest"
    " LEFT JOIN jobs AS roots ON roots.id = latest.root_id"
    " ORDER BY k LIMIT 1"
)


async def placed_tree(conn: Reads, job_id: str) -> tuple[str, int | None] | None:
    """The top-level job of job `job_id` and the partition its tree was placed in (None: by
    that job's id), or None when no job has that id; one round trip."""
    rows = list(await conn.execute_fetchall(_PLACED_TREE, (job_id, job_id)))
    if not rows or rows[0][0] is None:
        return None
    root_id, partition, _ = rows[0]
    return root_id, None if partition is None else int(partition)
