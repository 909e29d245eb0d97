"""The PostgreSQL journal's reads: the shared query functions run on a small connection pool."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

__all__ = ["PgReads", "pg_sql", "POOL_SIZE", "POOL_TIMEOUT_S"]

# API reads run side by side; the manager's own reads (recovery) are few and sequential.
POOL_SIZE = 4
# A read waits this long for a connection (the database may be restarting) before it fails.
POOL_TIMEOUT_S = 10.0


@functools.lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """The shared SQL (`?` placeholders) in psycopg's paramstyle (`%s`; a literal % doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgReads:
    """`execute_fetchall` (the `queries.Reads` protocol) on a pooled autocommit connection."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    async def execute_fetchall(
        self, sql: str, parameters: Iterable[Any] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one query (its own snapshot, as SQLite's reader has) and return every row."""
        params = None if parameters is None else tuple(parameters)
        query = sql if params is None else pg_sql(sql)
        # Not checked as it leaves the pool (an extra round trip per read, on the path of
        # every named trigger): a connection the server dropped (a restart, a failover) fails
        # its read, leaves the pool as broken, and the read goes again on another one.
        for attempt in range(POOL_SIZE + 1):
            conn: psycopg.AsyncConnection[Any] | None = None
            try:
                async with self.pool.connection() as conn:
                    cursor = await conn.execute(query, params)
                    return await cursor.fetchall()
            except psycopg.OperationalError:
                if conn is None or not conn.broken or attempt == POOL_SIZE:
                    raise
        raise AssertionError("unreachable")
