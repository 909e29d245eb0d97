"""The SQLite journal (`SqliteJournal`, behind the `Journal` protocol); `open_sqlite_journal`
opens one."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from workflow_manager.errors import JournalError
from workflow_manager.journal.base import BaseJournal
from workflow_manager.journal.checkahead import checked_ahead
from workflow_manager.journal.codec import decode_job
from workflow_manager.journal.failures import closed_error, read_failure
from workflow_manager.journal.queries import JOB_BY_ID
from workflow_manager.journal.records import JobRow
from workflow_manager.journal.schema import (
    SYNCHRONOUS_MODES,
    check_file,
    connect_lookups,
    connect_reader,
)
from workflow_manager.journal.sqlitestore import Operation, SqliteStore
from workflow_manager.journal.statements import SAVE_DEFINITION
from workflow_manager.journal.storable import storable_text
from workflow_manager.journal.writer import Writer

__all__ = ["SqliteJournal", "open_sqlite_journal"]


async def open_sqlite_journal(path: str | Path, *, synchronous: str = "FULL") -> SqliteJournal:
    """Open the journal at `path`, creating it if needed; JournalError if it is not usable."""
    path = Path(path)
    mode = synchronous.upper()
    if mode not in SYNCHRONOUS_MODES:
        raise JournalError(
            f"journal synchronous mode must be one of {', '.join(SYNCHRONOUS_MODES)}, "
            f"not {synchronous!r}"
        )
    # Blocking file checks (quick_check reads the whole file) stay off the event loop; a
    # manager's start began them before its imports (`checkahead`).
    ahead = checked_ahead(path)
    if ahead is not None:
        create = await asyncio.wrap_future(ahead)
    else:
        create = await asyncio.to_thread(check_file, path)
    store = await SqliteStore.open(path, mode, create)
    try:
        reader_conn = await connect_reader(path)
    except BaseException:
        await store.close()
        raise
    try:
        lookups = connect_lookups(path)
    except BaseException:
        await reader_conn.close()
        await store.close()
        raise
    return SqliteJournal(path, mode, Writer(store, str(path)), reader_conn, lookups)


class SqliteJournal(BaseJournal):
    """Appends batches with group commit on one connection; reads on another (WAL), on its
    thread, except a job's row by its id (`job`), read on the event loop from a third."""

    read_errors = (sqlite3.Error,)

    def __init__(
        self,
        path: Path,
        synchronous: str,
        writer: Writer,
        reader_conn: aiosqlite.Connection,
        lookups: sqlite3.Connection,
    ) -> None:
        super().__init__(str(path), writer, reader_conn)
        self.path = path
        self.synchronous = synchronous
        self._reader = reader_conn
        self._lookups = lookups

    async def job(self, job_id: str) -> JobRow | None:
        """The row of job `job_id`, or None: looked up on the event loop itself.

        Every trigger that names its job asks this before the job's first request goes out.
        A lookup by the primary key takes tens of microseconds; the hop to the reading thread
        and back costs 100 µs on an idle machine and 500 on a busy one, on that job's latency.
        A lookup that would have to wait for a lock (a checkpoint resetting the WAL) goes to
        the reading thread like any other read."""
        if self._closed:
            raise closed_error(self.where)
        try:
            # fetchall: the statement runs to its end, so it holds no snapshot of the WAL.
            rows = self._lookups.execute(JOB_BY_ID, (storable_text(job_id),)).fetchall()
            return decode_job(rows[0]) if rows else None
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise self._read_failure(exc, f"job {job_id}") from exc
        except (sqlite3.Error, ValueError) as exc:
            raise self._read_failure(exc, f"job {job_id}") from exc
        return await super().job(job_id)

    def _detail(self) -> str:
        return f" {self.synchronous}"

    async def _close_reads(self) -> None:
        self._lookups.close()
        await self._reader.close()

    def _save_definitions(self, rows: list[tuple[Any, ...]]) -> Operation:
        def save(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(SAVE_DEFINITION, rows)
            conn.execute("COMMIT")

        return save

    def _read_failure(self, exc: BaseException, what: str) -> JournalError:
        return read_failure(exc, self.path, what)
