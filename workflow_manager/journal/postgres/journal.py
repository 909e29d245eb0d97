"""The PostgreSQL journal (`PgJournal`, behind the `Journal` protocol); `open_pg_journal`
opens one."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from workflow_manager.errors import JournalError
from workflow_manager.journal.base import BaseJournal
from workflow_manager.journal.postgres import placed, retention
from workflow_manager.journal.postgres.failures import open_failure, read_failure
from workflow_manager.journal.postgres.location import PgLocation
from workflow_manager.journal.postgres.reads import POOL_SIZE, POOL_TIMEOUT_S, PgReads, pg_sql
from workflow_manager.journal.postgres.schema import SCHEMA_VERSION, prepare
from workflow_manager.journal.postgres.store import Fence, Operation, PgStore
from workflow_manager.journal.records import JobRow
from workflow_manager.journal.statements import SAVE_DEFINITION
from workflow_manager.journal.writer import Writer

__all__ = ["PgJournal", "open_pg_journal"]

log = logging.getLogger(__name__)
_SAVE_DEFINITION = pg_sql(SAVE_DEFINITION)


async def _plan_each_time(conn: psycopg.AsyncConnection) -> None:
    """Plan every statement with the table as it is now, not as it was when first prepared.

    psycopg prepares a statement run often; PostgreSQL then may reuse one generic plan, made
    while a fresh journal was tiny: a sequential scan per sent mark, slower as the table grows.
    """
    await conn.execute("SET plan_cache_mode = force_custom_plan")


async def open_pg_journal(url: str, *, create: bool = True) -> PgJournal:
    """Open the journal in the database at `url`, creating its tables if needed (`create`).

    JournalError (one line, no password) if the URL is bad, the database cannot be reached or
    refuses us, or it is not a workflow-manager journal of a version this one reads.
    """
    where = PgLocation.parse(url)
    try:
        conn = await psycopg.AsyncConnection.connect(where.conninfo, autocommit=True)
    except psycopg.Error as exc:
        raise open_failure(exc, where) from exc
    try:
        await _plan_each_time(conn)
        old = await prepare(conn, where, create=create)
        pool = AsyncConnectionPool(
            where.conninfo,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True},
            timeout=POOL_TIMEOUT_S,
            # Not `check`ed when taken: a read on a connection the server dropped goes again
            # on another (PgReads).
            configure=_plan_each_time,
            open=False,
            name="journal-reads",
        )
        await pool.open(wait=True, timeout=POOL_TIMEOUT_S)
    except BaseException as exc:
        await conn.close()
        if isinstance(exc, psycopg.Error):
            raise open_failure(exc, where) from exc
        raise
    if old < SCHEMA_VERSION:
        log.info("journal schema at %s: version %d -> %d", where, old, SCHEMA_VERSION)
    store = PgStore(conn, where)
    return PgJournal(where, Writer(store, str(where), placed.job_values), pool, store)


class PgJournal(BaseJournal):
    """Appends batches with group commit on one connection; reads on a small pool."""

    read_errors = (psycopg.Error,)
    retention = retention

    def __init__(
        self, where: PgLocation, writer: Writer, pool: AsyncConnectionPool, store: PgStore
    ) -> None:
        super().__init__(str(where), writer, PgReads(pool))
        self.location = where
        self._pool = pool
        self._store = store

    async def fence(self, check: Fence, hold_s: float) -> None:
        """Run `check` first in every commit (a partitioned manager's lease check).

        A transaction left open longer than `hold_s` (the manager paused mid-commit) is ended by
        the server: its lease locks must not keep another manager from taking over.
        """
        self._store.fence = check
        timeout_ms = max(1, int(hold_s * 1000))

        async def limit(conn: psycopg.AsyncConnection) -> None:
            await conn.execute(f"SET idle_in_transaction_session_timeout = {timeout_ms}")

        await self._writer.run(limit)

    async def job(self, job_id: str) -> JobRow | None:
        """The row of job `job_id` (with the partition its tree was placed in), or None."""
        return await self._read(f"job {job_id}", lambda c: placed.placed_job(c, job_id))

    async def tree_of(self, job_id: str) -> tuple[str, int | None] | None:
        """The top-level job of job `job_id` and the partition its tree was placed in (None: by
        that job's id), in one round trip; None when no job has that id."""
        return await self._read(f"tree of {job_id}", lambda c: placed.placed_tree(c, job_id))

    async def placements(self, root_ids: Collection[str]) -> dict[str, int]:
        """root id -> the partition its tree was placed in, for those of `root_ids` placed so
        (the others are in their id's partition)."""
        ids = sorted(set(root_ids))
        return await self._read("partitions of jobs", lambda c: placed.placements(c, ids))

    async def _close_reads(self) -> None:
        await self._pool.close()

    def _save_definitions(self, rows: list[tuple[Any, ...]]) -> Operation:
        async def save(conn: psycopg.AsyncConnection) -> None:
            async with conn.transaction(), conn.cursor() as cursor:
                await cursor.executemany(_SAVE_DEFINITION, rows)

        return save

    def _read_failure(self, exc: BaseException, what: str) -> JournalError:
        return read_failure(exc, self.location, what)
