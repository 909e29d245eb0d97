"""The PostgreSQL journal's write connection (the writer's `Store`).

A group is one transaction: each segment's events go in with COPY (less than half the client's
CPU per row of an `executemany`: bench/README.md), its job rows and sent marks with
`executemany`, which psycopg sends in pipeline mode (no round trip per row), and COMMIT waits
for the server's WAL flush (`synchronous_commit` on, PostgreSQL's default), so an acked message
survives a crash of the database server too.

PostgreSQL's text cannot hold NUL, which a stray reply's correlation id may: the rows come
here already made storable, the same for both journals (`workflow_manager.journal.storable`), so one
message cannot fail the commit of every batch in its group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from workflow_manager.errors import JournalError
from workflow_manager.journal.postgres.failures import is_database_error, write_failure
from workflow_manager.journal.postgres.location import PgLocation
from workflow_manager.journal.postgres.placed import UPSERT_JOB
from workflow_manager.journal.postgres.reads import pg_sql
from workflow_manager.journal.statements import INSERT_EVENT, MARK_SENT
from workflow_manager.journal.writer import Segment

__all__ = ["PgStore", "Operation", "Fence"]

# Runs on the write connection; it manages its own transaction.
Operation = Callable[[psycopg.AsyncConnection], Awaitable[Any]]
# A partitioned manager's check, last in every commit's transaction: given the partitions the
# commit's batches said they write for, and the top-level job ids of those that said none, it
# raises FencedOut unless those partitions' leases are still ours.
Fence = Callable[[psycopg.AsyncCursor, set[int], set[str]], Awaitable[None]]

# INSERT_EVENT's columns, in its order (the rows are encoded for it).
_COPY_EVENTS = "COPY events ({}) FROM STDIN".format(
    INSERT_EVENT.partition("(")[2].partition(")")[0]
)
_MARK_SENT = pg_sql(MARK_SENT)


def _placed(segments: list[Segment]) -> set[int]:
    """The partitions the segments' batches said they write for."""
    return set().union(*(segment.placed for segment in segments))


def _roots(segments: list[Segment]) -> set[str]:
    """The top-level job ids of the rows of the segments' batches that named no partition."""
    unplaced = [pending for segment in segments for pending in segment.unplaced]
    roots = {row[3] for pending in unplaced for row in pending.events if row[3] is not None}
    roots.update(row[1] for pending in unplaced for row in pending.jobs)
    return roots


class PgStore:
    """One autocommit connection; every write is an explicit transaction on it."""

    def __init__(self, conn: psycopg.AsyncConnection, where: PgLocation) -> None:
        self._conn = conn
        self._where = where
        self.fence: Fence | None = None

    async def write(self, segments: list[Segment]) -> None:
        """Write the segments in one transaction (fenced last, on a partitioned manager)."""
        async with self._conn.transaction(), self._conn.cursor() as cursor:
            for segment in segments:
                if segment.events:
                    async with cursor.copy(_COPY_EVENTS) as copy:
                        for row in segment.events:
                            await copy.write_row(row)
                if segment.jobs:
                    await cursor.executemany(UPSERT_JOB, segment.jobs)
                if segment.sent:
                    await cursor.executemany(_MARK_SENT, segment.sent)
            if self.fence is not None:
                # Last, just before COMMIT: the lease rows stay locked for the commit alone, so
                # a manager paused mid-write does not keep another from taking over.
                await self.fence(cursor, _placed(segments), _roots(segments))

    async def run(self, operation: Operation) -> Any:
        """`operation(conn)` on the write connection."""
        return await operation(self._conn)

    def write_failure(self, exc: BaseException) -> JournalError | None:
        """A psycopg error as the journal's error naming the database (a fence's refusal as
        it is); None for any other."""
        if isinstance(exc, JournalError):
            return exc
        return write_failure(exc, self._where) if is_database_error(exc) else None

    async def close(self) -> None:
        """Close the connection (a transaction left open is rolled back by the server)."""
        await self._conn.close()
