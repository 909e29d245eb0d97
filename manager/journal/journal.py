"""The SQLite journal (`SqliteJournal`, behind the `Journal` protocol); `open_journal` opens one."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

import aiosqlite

from manager.errors import JournalError
from manager.journal import history, queries, retention
from manager.journal.failures import closed_error, read_failure
from manager.journal.records import Batch, EventRow, JobRow
from manager.journal.schema import SYNCHRONOUS_MODES, check_file, connect_reader
from manager.journal.writer import Writer

__all__ = ["SqliteJournal", "open_journal"]

T = TypeVar("T")

_SAVE_DEFINITION = "INSERT OR IGNORE INTO definitions (hash, workflow, definition) VALUES (?, ?, ?)"


async def open_journal(path: str | Path, *, synchronous: str = "FULL") -> SqliteJournal:
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
    writer = await Writer.open(path, mode, create)
    try:
        reader_conn = await connect_reader(path)
    except BaseException:
        await writer.close()
        raise
    return SqliteJournal(path, mode, writer, reader_conn)


class SqliteJournal:
    """Appends batches with group commit on one connection; reads on another (WAL)."""

    def __init__(
        self,
        path: Path,
        synchronous: str,
        writer: Writer,
        reader_conn: aiosqlite.Connection,
    ) -> None:
        self.path = path
        self.synchronous = synchronous
        self._writer = writer
        self._reader = reader_conn
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self.failure else "open"
        return f"<Journal {self.path} {self.synchronous} {state}>"

    async def __aenter__(self) -> SqliteJournal:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def commits(self) -> int:
        """Group commits so far (each one transaction, one fsync with FULL)."""
        return self._writer.commits

    @property
    def failure(self) -> JournalError | None:
        """The write error that failed the journal, or None while it is healthy."""
        return self._writer.failure

    def watch_commits(self, on_commit: Callable[[float], None]) -> None:
        """Call `on_commit(seconds)` after each group commit, with the time it took."""
        self._writer.on_commit = on_commit

    def append(self, batch: Batch, *, lazy: bool = False) -> asyncio.Future[None]:
        """Queue `batch`; the future resolves when it is committed (JournalError if not).

        `lazy`: no hurry (e.g. sent marks): written with the next batch, or within 0.1 s.
        """
        return self._writer.append(batch, lazy=lazy)

    async def flush(self) -> None:
        """Wait until everything appended so far is committed."""
        await self._writer.run(None)

    async def close(self) -> None:
        """Commit what is queued, stop the writer and close both connections."""
        if self._closed:
            return
        self._closed = True
        try:
            try:
                await self._writer.stop()
                await self._reader.close()
            finally:
                # Closed last: the last connection to close checkpoints the WAL into the file.
                await self._writer.close()
        except sqlite3.Error as exc:
            raise JournalError(f"cannot close the journal at {self.path}: {exc}") from exc

    async def save_definitions(self, defs: Iterable[tuple[str, str, str]]) -> None:
        """Store workflow definitions (content hash, name, JSON text); known hashes are kept."""
        rows = [tuple(row) for row in defs]
        if not rows:
            return

        def save(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(_SAVE_DEFINITION, rows)
            conn.execute("COMMIT")

        await self._writer.run(save)

    async def definitions(self, hashes: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
        """content hash -> (workflow name, definition JSON) for `hashes`, or all of them."""
        wanted = None if hashes is None else list(hashes)
        return await self._read("workflow definitions", lambda c: queries.definitions(c, wanted))

    async def running_roots(self) -> list[str]:
        """Ids of the running top-level jobs, oldest first."""
        return await self._read("running jobs", queries.running_roots)

    async def replay_rows(self, root_ids: Sequence[str]) -> list[EventRow]:
        """The submissions and replies of the trees under `root_ids`, in seq order."""
        ids = list(root_ids)
        return await self._read("rows to replay", lambda c: queries.replay_rows(c, ids))

    async def pending_outbound(self) -> list[EventRow]:
        """Outbound rows not yet confirmed sent, in seq order."""
        return await self._read("pending outbound rows", queries.pending_outbound)

    async def job(self, job_id: str) -> JobRow | None:
        """The row of job `job_id`, or None."""
        return await self._read(f"job {job_id}", lambda c: queries.job(c, job_id))

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of `name` by status: running, and finished since `finished_since`."""
        return await self._read(
            f"jobs of workflow {name!r}", lambda c: queries.workflow_jobs(c, name, finished_since)
        )

    async def events_of(self, job_id: str, tree: bool = False) -> list[EventRow]:
        """Rows of `job_id` in seq order; `tree=True` adds the rows of every job below it."""
        return await self._read(
            f"rows of job {job_id}", lambda c: queries.events_of(c, job_id, tree)
        )

    async def children(self, parent_id: str) -> dict[str, history.ChildRow]:
        """Every started child job of `parent_id`, by id."""
        return await self._read(
            f"children of job {parent_id}", lambda c: history.children(c, parent_id)
        )

    async def recent_jobs(
        self,
        *,
        workflow: str | None = None,
        status: str | None = None,
        id_prefix: str | None = None,
        before: float | None = None,
        limit: int = 50,
    ) -> list[history.JobListing]:
        """Top-level jobs, newest first, matching every filter given."""
        return await self._read(
            "the latest jobs",
            lambda c: history.recent_jobs(
                c,
                workflow=workflow,
                status=status,
                id_prefix=id_prefix,
                before=before,
                limit=limit,
            ),
        )

    async def finished_since(self, since: float) -> list[tuple[str, str, float]]:
        """(workflow, status, seconds it ran) of the top-level jobs finished since `since`."""
        return await self._read("jobs finished lately", lambda c: history.finished_since(c, since))

    async def delete_finished(self, before: float, limit: int = 1000) -> int:
        """Delete up to `limit` top-level jobs finished before `before`, with their trees.

        Returns how many top-level jobs went. Runs in short transactions between group commits.
        """
        deleted = 0
        while deleted < limit:
            chunk = min(retention.TREES_PER_TRANSACTION, limit - deleted)
            done = await self._writer.run(
                lambda c, chunk=chunk: retention.delete_trees(c, before, chunk)
            )
            deleted += done
            if done < chunk:
                break
        while True:
            done = await self._writer.run(
                lambda c: retention.delete_orphans(c, before, retention.ORPHANS_PER_TRANSACTION)
            )
            if done < retention.ORPHANS_PER_TRANSACTION:
                return deleted

    async def _read(self, what: str, query: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        if self._closed:
            raise closed_error(self.path)
        try:
            return await query(self._reader)
        except (sqlite3.Error, ValueError) as exc:
            # ValueError: a stored JSON text that no longer parses (edited by hand?).
            raise read_failure(exc, self.path, what) from exc
