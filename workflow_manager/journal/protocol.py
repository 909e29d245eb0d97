"""What the manager needs of its journal, as a Protocol: SQLite today, others behind it later.

Appends are group-committed in order; `append` returns at once with a future that resolves
when the batch is durable. Reads see only what has been committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol

from workflow_manager.errors import JournalError
from workflow_manager.journal.bulkreads import ENDED, EndedJob
from workflow_manager.journal.history import ChildRow, JobListing
from workflow_manager.journal.recalls import EndedRecently
from workflow_manager.journal.records import Batch, EventRow, JobRow

__all__ = ["Journal", "JobHistory"]


class JobHistory(Protocol):
    """The reads the API and the web UI browse jobs with; all of them see committed state."""

    async def job(self, job_id: str) -> JobRow | None:
        """The row of job `job_id`, or None."""
        ...

    async def events_of(self, job_id: str, tree: bool = False) -> list[EventRow]:
        """Rows of `job_id` in order; `tree=True` adds those of every job below it."""
        ...

    async def job_outcomes(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[str, Any, dict[str, Any] | None]]:
        """job id -> (status, payload, result) of those of `ids` the journal has a row of."""
        ...

    async def children(self, parent_id: str) -> dict[str, ChildRow]:
        """Every started child job of `parent_id`, by id."""
        ...

    async def recent_jobs(
        self,
        *,
        workflow: str | None = None,
        status: str | None = None,
        id_prefix: str | None = None,
        before: float | None = None,
        limit: int = 50,
    ) -> list[JobListing]:
        """Top-level jobs, newest first, matching every filter given."""
        ...

    async def running_jobs(self) -> list[JobListing]:
        """Every running top-level job, oldest first."""
        ...

    async def placements(self, root_ids: Collection[str]) -> dict[str, int]:
        """root id -> the partition its tree was placed in, for those of `root_ids` placed by a
        key (the others are in their id's partition)."""
        ...

    async def finished_since(self, since: float) -> list[tuple[str, str, float]]:
        """(workflow, status, seconds it ran) of the top-level jobs finished since `since`."""
        ...


class Journal(JobHistory, Protocol):
    """The durable, ordered log of every message and job. Errors are `JournalError`s."""

    @property
    def failure(self) -> JournalError | None:
        """The write error that failed the journal, or None while it is healthy."""
        ...

    def append(self, batch: Batch, *, lazy: bool = False) -> asyncio.Future[None]:
        """Queue `batch`, in order; the future resolves once it is committed.

        `lazy`: no hurry (sent marks): it may wait for the next batch, for a short while.
        """
        ...

    async def flush(self) -> None:
        """Wait until everything appended so far is committed."""
        ...

    async def close(self) -> None:
        """Commit what is queued and close."""
        ...

    async def save_definitions(self, defs: Iterable[tuple[str, str, str]]) -> None:
        """Store workflow definitions (content hash, name, JSON text); known hashes are kept."""
        ...

    async def definitions(self, hashes: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
        """content hash -> (workflow name, definition JSON) for `hashes`, or all of them."""
        ...

    async def running_roots(self) -> list[str]:
        """Ids of the running top-level jobs, oldest first."""
        ...

    async def ended_jobs(
        self,
        *,
        workflow: str | None = None,
        statuses: Sequence[str] = ENDED,
        submitted_after: float | None = None,
        submitted_before: float | None = None,
        id_prefix: str | None = None,
        with_meta: bool = False,
        limit: int,
    ) -> list[EndedJob]:
        """The ended top-level jobs matching every filter given, oldest first (a bulk's)."""
        ...

    async def bulks_under_way(self) -> list[str]:
        """The journal ids (`bulk:<id>`) of the bulk actions not finished."""
        ...

    async def dispatched_since(self, steps: Collection[str], since: float) -> list[EventRow]:
        """The step requests of steps named in `steps` sent at or after `since`, oldest first
        (what recovery feeds rate limits: their windows outlive a restart)."""
        ...

    async def job_starts_since(self, since: float) -> list[tuple[float, EventRow]]:
        """The first starts of top-level jobs at or after `since`, oldest first: when each
        started, and its submission row (what recovery feeds workflows' rates)."""
        ...

    async def ended_since(self, workflow: str, since: float) -> list[EndedRecently]:
        """The ended top-level jobs of `workflow` submitted at or after `since`, oldest first
        (what recovery recalls of ended jobs whose rules outlive them)."""
        ...

    async def replay_rows(self, root_ids: Sequence[str]) -> list[EventRow]:
        """The replayable rows (engine events) of the trees under `root_ids`, in order."""
        ...

    async def schedule_rows(self, journal_ids: Sequence[str]) -> list[EventRow]:
        """The latest pause/resume row of each schedule filed under `journal_ids`, in seq order."""
        ...

    async def latest_row(self, job_id: str) -> EventRow | None:
        """The latest row filed under `job_id`, or None."""
        ...

    async def tree_of(self, job_id: str) -> tuple[str, int | None] | None:
        """The top-level job of job `job_id` and the partition its tree was placed in (None: by
        that job's id), in one read; None when no job has that id."""
        ...

    async def pending_outbound(self) -> list[EventRow]:
        """Outbound rows not yet marked sent, in order."""
        ...

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level jobs of `name` by status: running, and finished since `finished_since`."""
        ...

    async def delete_finished(self, before: float, limit: int = 1000) -> int:
        """Delete up to `limit` top-level jobs finished before `before`; returns how many went."""
        ...
