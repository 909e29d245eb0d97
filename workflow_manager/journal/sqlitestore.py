"""The SQLite journal's write connection (the writer's `Store`), on a thread of its own.

A whole transaction (BEGIN, the inserts, COMMIT) is one call to that thread: every reply's ack
waits for a commit, and each hand-off between threads adds to that wait. Reads go through
aiosqlite, on another connection.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from workflow_manager.errors import JournalError
from workflow_manager.journal.failures import write_failure
from workflow_manager.journal.schema import connect_writer
from workflow_manager.journal.statements import INSERT_EVENT, MARK_SENT, UPSERT_JOB
from workflow_manager.journal.writer import Segment

__all__ = ["SqliteStore", "Operation"]

log = logging.getLogger(__name__)
T = TypeVar("T")

# Runs on the writer's thread with the write connection; it manages its own transaction.
Operation = Callable[[sqlite3.Connection], Any]


def _write_segments(conn: sqlite3.Connection, segments: list[Segment]) -> None:
    """Write `segments` in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    for segment in segments:
        if segment.events:
            conn.executemany(INSERT_EVENT, segment.events)
        if segment.jobs:
            conn.executemany(UPSERT_JOB, segment.jobs)
        if segment.sent:
            conn.executemany(MARK_SENT, segment.sent)
    conn.execute("COMMIT")


def _guarded(conn: sqlite3.Connection, run: Callable[..., T], *args: Any) -> T:
    """`run(conn, *args)` on the writer's thread; a transaction it left open is rolled back."""
    try:
        return run(conn, *args)
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        # The connection rolls back when closed; the original error is the one to report.
        log.warning("rollback of the journal failed: %s", exc)


class SqliteStore:
    """The write connection (plain sqlite3) and the one thread it is used on."""

    def __init__(self, conn: sqlite3.Connection, executor: ThreadPoolExecutor, path: Path) -> None:
        self._conn = conn
        self._executor = executor
        self._path = path
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def open(cls, path: Path, synchronous: str, create: bool) -> SqliteStore:
        """Open the write connection on a new writer thread (JournalError if it cannot)."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-writer")
        loop = asyncio.get_running_loop()
        try:
            conn = await loop.run_in_executor(executor, connect_writer, path, synchronous, create)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(conn, executor, path)

    async def write(self, segments: list[Segment]) -> None:
        """Write the segments in one transaction, on the writer's thread."""
        await self._loop.run_in_executor(
            self._executor, _guarded, self._conn, _write_segments, segments
        )

    async def run(self, operation: Operation) -> Any:
        """`operation(conn)` on the writer's thread."""
        return await self._loop.run_in_executor(self._executor, _guarded, self._conn, operation)

    def write_failure(self, exc: BaseException) -> JournalError | None:
        """A sqlite3 error as the journal's error naming the file; None for any other."""
        return write_failure(exc, self._path) if isinstance(exc, sqlite3.Error) else None

    async def close(self) -> None:
        """Close the connection on its own thread; as the last one it checkpoints the WAL."""
        try:
            await self._loop.run_in_executor(self._executor, self._conn.close)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot close the journal at {self._path}: {exc}") from exc
        finally:
            self._executor.shutdown(wait=False)
