"""What the API needs of the orchestrator, as a Protocol (the orchestrator is the one there is)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from payload_refs import PayloadStore
from workflow_manager.bulkactions import JobFilter
from workflow_manager.cluster.bulkparts import MatchedJob
from workflow_manager.cluster.directory import Directory
from workflow_manager.config.models import Workflow
from workflow_manager.engine import EngineState, Job
from workflow_manager.engine.traceids import TraceParent
from workflow_manager.journal import JobHistory
from workflow_manager.scheduler import Scheduler

__all__ = ["JobService", "Clock"]

Clock = Callable[[], float]
"""Unix seconds now; `time.time` outside tests."""


class JobService(Protocol):
    """What the API needs of the orchestrator. State is read on the event loop, never mutated."""

    @property
    def state(self) -> EngineState:
        """Every job by id (read only)."""
        ...

    @property
    def history(self) -> JobHistory:
        """The journal's reads for browsing jobs (committed state)."""
        ...

    @property
    def workflows(self) -> Mapping[str, Workflow]:
        """The current workflow definitions by name."""
        ...

    @property
    def schedules(self) -> Scheduler:
        """The workflows' schedules: their next firings, pausing and resuming."""
        ...

    @property
    def connected(self) -> bool:
        """True while connected to the broker, with the manager's consumers in place."""
        ...

    @property
    def disconnected_for_s(self) -> float | None:
        """Seconds since the broker connection was lost; None while connected."""
        ...

    @property
    def directory(self) -> Directory | None:
        """Who runs each partition and where its API is; None without partitions."""
        ...

    @property
    def payload_stores(self) -> Mapping[str, PayloadStore]:
        """The payload stores by name (`--payload-store`): where `GET /api/payloads` reads the
        values references name. Empty without any."""
        ...

    @property
    def failure(self) -> BaseException | None:
        """Why the manager stopped taking work (its journal failed), or None."""
        ...

    async def submit(
        self,
        workflow: str,
        payload: Any,
        job_id: str | None = None,
        trace: TraceParent | None = None,
        priority: int = 0,
        *,
        not_before: float | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        """Start a job (in `trace`, if given; at `not_before`, if later; with metadata `meta`)
        and return its id; raise a `SubmitError` if not."""
        ...

    async def cluster(self) -> dict[str, Any]:
        """The partitions and their leases (GET /api/cluster)."""
        ...

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Job | None:
        """A job by canonical id: running ones from memory, finished ones from the journal;
        NotOwner for a running job of another manager's partition (with `replay_foreign`:
        that job as its committed journal rows make it)."""
        ...

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Top-level job ids of a workflow by status; finished ones only since the given time."""
        ...

    async def cancel(self, job_id: str) -> Job:
        """Cancel a scheduled or running job; raise JobNotFound or JobConflict when it cannot be."""
        ...

    async def signal(self, job_id: str, step: str, payload: dict[str, Any]) -> str:
        """Signal a waiting step: "completed" or "kept"; JobNotFound or JobConflict if not."""
        ...

    async def retry(self, job_id: str) -> Job:
        """Retry a failed job from where it failed; raise JobNotFound or JobConflict otherwise."""
        ...

    async def pause(self, job_id: str, paused: bool) -> Job:
        """Pause a running job or resume a paused one; JobNotFound or JobConflict otherwise."""
        ...

    async def bulk(
        self,
        action: str,
        jobs: JobFilter,
        params: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> tuple[str | None, list[str]]:
        """Journal a bulk action on the jobs `jobs` matches (or, `dry_run`, only match them):
        its id (None for a dry run) and the ids matched."""
        ...

    async def bulk_status(self, bulk_id: str) -> dict[str, Any] | None:
        """Where a bulk action stands; None if there is none."""
        ...

    async def bulk_matches(
        self, jobs: JobFilter, *, ended: bool
    ) -> tuple[list[MatchedJob], list[int]]:
        """Partitioned: the top-level jobs in memory `jobs` matches (with the journal's ended
        ones when `ended`), and the partitions this manager answers for."""
        ...

    async def bulk_part(
        self,
        part_id: str,
        partition: int,
        action: str,
        job_ids: tuple[str, ...],
        params: dict[str, Any] | None,
        filter: dict[str, Any] | None,
    ) -> bool:
        """Partitioned: journal and carry out one partition's part of a bulk (NotOwner when
        another manager runs that partition); False when it existed already."""
        ...

    async def fork(
        self,
        source_id: str,
        step: str,
        *,
        input: dict[str, Any] | None = None,
        definition: str = "current",
        children: str = "failed",
        job_id: str | None = None,
    ) -> str:
        """Fork a finished job from `step` (`ApiRequests.fork`); returns the new job's id."""
        ...
