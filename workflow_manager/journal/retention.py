"""Retention: delete finished job trees, in short transactions run between the writer's groups.

A tree goes as a whole: its top-level job, every job whose root_id is that job, and their event
rows. A tree with an outbound row still pending (an outcome notice not yet confirmed) is kept
until it is sent. A bulk action's rows (its job ids, its slices) go once it finished before the
cutoff. Rows outside any tree (root_id NULL, e.g. replies for unknown jobs) are deleted by age.
"""

from __future__ import annotations

import sqlite3

__all__ = [
    "delete_trees",
    "delete_orphans",
    "delete_rows",
    "TREES_PER_TRANSACTION",
    "ORPHANS_PER_TRANSACTION",
    "SELECT_TREES",
    "SELECT_BULKS",
    "BULKS_FINISHED",
    "DELETE_ORPHANS",
]

# Small enough that a group commit waiting behind one chunk waits milliseconds, not seconds.
TREES_PER_TRANSACTION = 100
ORPHANS_PER_TRANSACTION = 2_000

SELECT_TREES = """
SELECT id FROM jobs AS j
WHERE parent_id IS NULL AND finished_at < ? AND status != 'running'
  AND NOT EXISTS (
    SELECT 1 FROM events AS e
    WHERE e.root_id = j.id AND e.msg_id IS NOT NULL AND e.sent_at IS NULL
  )
ORDER BY finished_at
LIMIT ?
"""

# A bulk's rows are filed under `bulk:<id>` (a range on events_job, not LIKE); its last slice's
# row says finished (`meta` is compact JSON: BULKS_FINISHED is a parameter of the LIKE).
SELECT_BULKS = """
SELECT root_id FROM events
WHERE job_id >= 'bulk:' AND job_id < 'bulk;' AND kind = 'bulk-step' AND at < ? AND meta LIKE ?
LIMIT ?
"""
BULKS_FINISHED = '%"finished":true%'

# A schedule's pause rows, and its latest `fired` row (the job it last started, which its
# status shows), are the schedule's state: kept however old.
DELETE_ORPHANS = """
DELETE FROM events WHERE seq IN (
  SELECT seq FROM events AS e
  WHERE root_id IS NULL AND at < ? AND NOT (msg_id IS NOT NULL AND sent_at IS NULL)
    AND kind != 'schedule'
    AND NOT (kind = 'fired' AND seq = (SELECT max(seq) FROM events WHERE job_id = e.job_id))
  LIMIT ?
)
"""


def delete_rows(roots: list[str]) -> list[tuple[str, list[str]]]:
    """The statements (SQL, parameters) that delete the trees under `roots`, rows first."""
    if not roots:
        return []
    marks = ", ".join("?" * len(roots))
    return [
        (f"DELETE FROM events WHERE root_id IN ({marks})", roots),
        (f"DELETE FROM jobs WHERE root_id IN ({marks}) OR id IN ({marks})", roots + roots),
    ]


def delete_trees(conn: sqlite3.Connection, before: float, limit: int) -> int:
    """Delete up to `limit` trees finished before `before` in one transaction, then as many
    bulk actions finished before it; returns how many trees."""
    conn.execute("BEGIN IMMEDIATE")
    roots = [id_ for (id_,) in conn.execute(SELECT_TREES, (before, limit))]
    bulks = [id_ for (id_,) in conn.execute(SELECT_BULKS, (before, BULKS_FINISHED, limit))]
    for sql, params in delete_rows(roots + bulks):
        conn.execute(sql, params)
    conn.execute("COMMIT")
    return len(roots)


def delete_orphans(conn: sqlite3.Connection, before: float, limit: int) -> int:
    """Delete up to `limit` rows outside any tree written before `before`; returns how many."""
    conn.execute("BEGIN IMMEDIATE")
    deleted = conn.execute(DELETE_ORPHANS, (before, limit)).rowcount
    conn.execute("COMMIT")
    return deleted
