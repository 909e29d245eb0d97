"""The PostgreSQL journal's write connection (the writer's `Store`).

A group is one transaction: each segment's rows go with `executemany`, which psycopg sends in
pipeline mode (no round trip per row), and COMMIT waits for the server's WAL flush
(`synchronous_commit` on, PostgreSQL's default), so an acked message survives a crash of the
database server too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from manager.errors import JournalError
from manager.journal.postgres.failures import is_database_error, write_failure
from manager.journal.postgres.location import PgLocation
from manager.journal.postgres.reads import pg_sql
from manager.journal.statements import INSERT_EVENT, MARK_SENT, UPSERT_JOB
from manager.journal.writer import Segment

__all__ = ["PgStore", "Operation"]

# Runs on the write connection; it manages its own transaction.
Operation = Callable[[psycopg.AsyncConnection], Awaitable[Any]]

_INSERT_EVENT = pg_sql(INSERT_EVENT)
_UPSERT_JOB = pg_sql(UPSERT_JOB)
_MARK_SENT = pg_sql(MARK_SENT)


class PgStore:
    """One autocommit connection; every write is an explicit transaction on it."""

    def __init__(self, conn: psycopg.AsyncConnection, where: PgLocation) -> None:
        self._conn = conn
        self._where = where

    async def write(self, segments: list[Segment]) -> None:
        """Write the segments in one transaction."""
        async with self._conn.transaction(), self._conn.cursor() as cursor:
            for segment in segments:
                if segment.events:
                    await cursor.executemany(_INSERT_EVENT, segment.events)
                if segment.jobs:
                    await cursor.executemany(_UPSERT_JOB, segment.jobs)
                if segment.sent:
                    await cursor.executemany(_MARK_SENT, segment.sent)

    async def run(self, operation: Operation) -> Any:
        """`operation(conn)` on the write connection."""
        return await operation(self._conn)

    def write_failure(self, exc: BaseException) -> JournalError | None:
        """A psycopg error as the journal's error naming the database; None for any other."""
        return write_failure(exc, self._where) if is_database_error(exc) else None

    async def close(self) -> None:
        """Close the connection (a transaction left open is rolled back by the server)."""
        await self._conn.close()
