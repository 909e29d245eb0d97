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
from workflow_manager.journal.failures import read_failure
from workflow_manager.journal.schema import SYNCHRONOUS_MODES, check_file, connect_reader
from workflow_manager.journal.sqlitestore import Operation, SqliteStore
from workflow_manager.journal.statements import SAVE_DEFINITION
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
    # Blocking file checks (quick_check reads the whole file) stay off the event loop.
    create = await asyncio.to_thread(check_file, path)
    store = await SqliteStore.open(path, mode, create)
    try:
        reader_conn = await connect_reader(path)
    except BaseException:
        await store.close()
        raise
    return SqliteJournal(path, mode, Writer(store, str(path)), reader_conn)


class SqliteJournal(BaseJournal):
    """Appends batches with group commit on one connection; reads on another (WAL)."""

    read_errors = (sqlite3.Error,)

    def __init__(
        self,
        path: Path,
        synchronous: str,
        writer: Writer,
        reader_conn: aiosqlite.Connection,
    ) -> None:
        super().__init__(str(path), writer, reader_conn)
        self.path = path
        self.synchronous = synchronous
        self._reader = reader_conn

    def _detail(self) -> str:
        return f" {self.synchronous}"

    async def _close_reads(self) -> None:
        await self._reader.close()

    def _save_definitions(self, rows: list[tuple[Any, ...]]) -> Operation:
        def save(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(SAVE_DEFINITION, rows)
            conn.execute("COMMIT")

        return save

    def _read_failure(self, exc: BaseException, what: str) -> JournalError:
        return read_failure(exc, self.path, what)
