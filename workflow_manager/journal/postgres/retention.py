"""Retention on PostgreSQL: the shared statements of `workflow_manager.journal.retention`, each
chunk one transaction on the writer's connection."""

from __future__ import annotations

import psycopg

from workflow_manager.journal.postgres.reads import pg_sql
from workflow_manager.journal.retention import (
    BULKS_FINISHED,
    DELETE_ORPHANS,
    SELECT_BULKS,
    SELECT_TREES,
    delete_rows,
)

__all__ = ["delete_trees", "delete_orphans"]


async def delete_trees(conn: psycopg.AsyncConnection, before: float, limit: int) -> int:
    """Delete up to `limit` trees finished before `before` in one transaction, then as many
    bulk actions finished before it; returns how many trees."""
    async with conn.transaction():
        cursor = await conn.execute(pg_sql(SELECT_TREES), (before, limit))
        roots = [id_ for (id_,) in await cursor.fetchall()]
        cursor = await conn.execute(pg_sql(SELECT_BULKS), (before, BULKS_FINISHED, limit))
        bulks = [id_ for (id_,) in await cursor.fetchall()]
        for sql, params in delete_rows(roots + bulks):
            await conn.execute(pg_sql(sql), params)
    return len(roots)


async def delete_orphans(conn: psycopg.AsyncConnection, before: float, limit: int) -> int:
    """Delete up to `limit` rows outside any tree written before `before`; returns how many."""
    async with conn.transaction():
        cursor = await conn.execute(pg_sql(DELETE_ORPHANS), (before, limit))
    return cursor.rowcount
