"""What the SQLite and PostgreSQL journals share: group commit through a `Writer`, every read
(the query functions of `queries` and `history` run on either database), retention's loop.

A journal subclass supplies its retention module (whose `delete_trees` and `delete_orphans`
are operations of its store), its definitions write, which errors its database raises, and how
its readers close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from types import ModuleType
from typing import Any, TypeVar

from workflow_manager.errors import JournalError
from workflow_manager.journal import bulkreads, history, queries, ratereads, recalls, retention
from workflow_manager.journal.failures import closed_error
from workflow_manager.journal.queries import Reads
from workflow_manager.journal.records import Batch, EventRow, JobRow
from workflow_manager.journal.storable import StorableReads, storable_params
from workflow_manager.journal.writer import Writer

__all__ = ["BaseJournal"]

T = TypeVar("T")


class BaseJournal:
    """Appends batches with group commit on one connection; reads on others."""

    # The errors its database raises; a read may also raise ValueError (a stored JSON text
    # that no longer parses).
    read_errors: tuple[type[BaseException], ...] = ()
    # delete_trees(conn, before, limit) and delete_orphans(conn, before, limit) on its store.
    retention: ModuleType = retention

    def __init__(self, where: str, writer: Writer, reads: Reads) -> None:
        self.where = where
        self._writer = writer
        # Every lookup by a text finds the row written for it (storable: NUL, surrogates).
        self._reads: Reads = StorableReads(reads)
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self.failure else "open"
        return f"<Journal {self.where}{self._detail()} {state}>"

    def _detail(self) -> str:
        """What the repr shows after the journal's place (e.g. SQLite's synchronous mode)."""
        return ""

    async def __aenter__(self) -> BaseJournal:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def commits(self) -> int:
        """Group commits so far (each one transaction)."""
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
        """Commit what is queued, stop the writer and close the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            try:
                await self._writer.stop()
                await self._close_reads()
            finally:
                # Closed last (SQLite: the last connection to close checkpoints the WAL).
                await self._writer.close()
        except self.read_errors as exc:
            raise JournalError(f"cannot close the journal at {self.where}: {exc}") from exc

    async def _close_reads(self) -> None:
        """Close what the reads run on."""
        raise NotImplementedError

    async def save_definitions(self, defs: Iterable[tuple[str, str, str]]) -> None:
        """Store workflow definitions (content hash, name, JSON text); known hashes are kept."""
        rows = [storable_params(row) for row in defs]
        if rows:
            await self._writer.run(self._save_definitions(rows))

    def _save_definitions(self, rows: list[tuple[Any, ...]]) -> Any:
        """The writer operation that inserts these definition rows in one transaction."""
        raise NotImplementedError

    def _delete_trees(self, before: float, limit: int) -> Any:
        return lambda conn: self.retention.delete_trees(conn, before, limit)

    def _delete_orphans(self, before: float, limit: int) -> Any:
        return lambda conn: self.retention.delete_orphans(conn, before, limit)

    async def delete_finished(self, before: float, limit: int = 1000) -> int:
        """Delete up to `limit` top-level jobs finished before `before`, with their trees.

        Returns how many top-level jobs went. Runs in short transactions between group commits.
        """
        deleted = 0
        while deleted < limit:
            chunk = min(retention.TREES_PER_TRANSACTION, limit - deleted)
            done = await self._writer.run(self._delete_trees(before, chunk))
            deleted += done
            if done < chunk:
                break
        while True:
            done = await self._writer.run(
                self._delete_orphans(before, retention.ORPHANS_PER_TRANSACTION)
            )
            if done < retention.ORPHANS_PER_TRANSACTION:
                return deleted

    async def definitions(self, hashes: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
        """content hash -> (workflow name, definition JSON) for `hashes`, or all of them."""
        wanted = None if hashes is None else list(hashes)
        return await self._read("workflow definitions", lambda c: queries.definitions(c, wanted))

    async def running_roots(self) -> list[str]:
        """Ids of the running top-level jobs, oldest first."""
        return await self._read("running jobs", queries.running_roots)

    async def placements(self, root_ids: Collection[str]) -> dict[str, int]:
        """root id -> the partition its tree was placed in, for those of `root_ids` placed by a
        key; every other tree is in its id's partition (always, in a journal never partitioned)."""
        return {}

    async def replay_rows(self, root_ids: Sequence[str]) -> list[EventRow]:
        """The submissions and replies of the trees under `root_ids`, in seq order."""
        ids = list(root_ids)
        return await self._read("rows to replay", lambda c: queries.replay_rows(c, ids))

    async def schedule_rows(self, journal_ids: Sequence[str]) -> list[EventRow]:
        """The latest pause/resume row of each schedule filed under `journal_ids`, in seq order."""
        ids = list(journal_ids)
        return await self._read("schedule rows", lambda c: queries.schedule_rows(c, ids))

    async def latest_row(self, job_id: str) -> EventRow | None:
        """The latest row filed under `job_id`, or None."""
        return await self._read(f"latest row of {job_id}", lambda c: queries.latest_row(c, job_id))

    async def tree_of(self, job_id: str) -> tuple[str, int | None] | None:
        """The top-level job of job `job_id` and the partition its tree was placed in (None: by
        that job's id), from the job's row or the latest row filed under it (a running child
        has no row until it ends), in one read; None when no job has that id."""
        return await self._read(f"tree of {job_id}", lambda c: queries.tree_of(c, job_id))

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

    async def ended_jobs(
        self,
        *,
        workflow: str | None = None,
        statuses: Sequence[str] = bulkreads.ENDED,
        submitted_after: float | None = None,
        submitted_before: float | None = None,
        id_prefix: str | None = None,
        with_meta: bool = False,
        limit: int,
    ) -> list[bulkreads.EndedJob]:
        """The ended top-level jobs matching every filter given, oldest first (a bulk's)."""
        return await self._read(
            "jobs matching a bulk filter",
            lambda c: bulkreads.ended_jobs(
                c, workflow=workflow, statuses=statuses, submitted_after=submitted_after,
                submitted_before=submitted_before, id_prefix=id_prefix, with_meta=with_meta,
                limit=limit,
            ),
        )  # fmt: skip

    async def dispatched_since(self, steps: Collection[str], since: float) -> list[EventRow]:
        """The step requests of steps named in `steps` sent at or after `since`, oldest first
        (what recovery feeds rate limits)."""
        return await self._read(
            "recent step requests", lambda c: ratereads.dispatched_since(c, steps, since)
        )

    async def job_starts_since(self, since: float) -> list[tuple[float, EventRow]]:
        """The first starts of top-level jobs at or after `since`, oldest first, each with its
        submission row (what recovery feeds workflow rates)."""
        return await self._read("recent job starts", lambda c: ratereads.job_starts_since(c, since))

    async def ended_since(self, workflow: str, since: float) -> list[recalls.EndedRecently]:
        """The ended top-level jobs of `workflow` submitted at or after `since`, oldest first."""
        return await self._read(
            f"jobs of {workflow!r} ended lately", lambda c: recalls.ended_since(c, workflow, since)
        )

    async def bulks_under_way(self) -> list[str]:
        """The journal ids (`bulk:<id>`) of the bulk actions not finished."""
        return await self._read("bulks under way", bulkreads.bulks_under_way)

    async def job_outcomes(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[str, Any, dict[str, Any] | None]]:
        """job id -> (status, payload, result) of those of `ids` the journal has a row of."""
        return await self._read("job outcomes", lambda c: queries.job_outcomes(c, ids))

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

    async def running_jobs(self) -> list[history.JobListing]:
        """Every running top-level job, oldest first."""
        return await self._read("running jobs", history.running_jobs)

    async def finished_since(self, since: float) -> list[tuple[str, str, float]]:
        """(workflow, status, seconds it ran) of the top-level jobs finished since `since`."""
        return await self._read("jobs finished lately", lambda c: history.finished_since(c, since))

    def _read_failure(self, exc: BaseException, what: str) -> JournalError:
        """The journal's error for a read (`what` names it) that failed with `exc`."""
        raise NotImplementedError

    async def _read(self, what: str, query: Callable[[Reads], Awaitable[T]]) -> T:
        if self._closed:
            raise closed_error(self.where)
        # ValueError too: a stored JSON text that no longer parses (edited by hand?).
        errors: tuple[type[BaseException], ...] = (*self.read_errors, ValueError)
        try:
            return await query(self._reads)
        except errors as exc:
            raise self._read_failure(exc, what) from exc
