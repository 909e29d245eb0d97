"""Bulk actions, the manager's side: the jobs a filter matches, and carrying a bulk out.

`matching_jobs` evaluates a filter once, over the top-level jobs in memory and the ended ones
in the journal. `BulkRunner` carries each bulk under way out in the background: it reads
where the bulk stands, prepares the next jobs' events (a retried job that left memory is
replayed back first, a fork's source read into its seed) and runs them through the pipeline
as one `BulkSlice`, until the engine says the bulk is finished (`workflow_manager.engine.bulk`).
After a restart, recovery has replayed each bulk under way to where its journal left it, and
the runner goes on from there: no job twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.engine import (
    BulkRun,
    BulkSlice,
    CancelRequested,
    EngineState,
    ForkSeed,
    Job,
    JobSubmitted,
    PauseRequested,
    RetryRequested,
)
from workflow_manager.engine.bulk import bulk_journal_id
from workflow_manager.errors import BrokerError, JournalError, MessageFailed
from workflow_manager.forks import fork_submission
from workflow_manager.journal import JobRow, Journal

if TYPE_CHECKING:
    from workflow_manager.pipeline import Pipeline


class JobReads(Protocol):
    """What the runner reads of jobs (`workflow_manager.requests.ApiRequests` has it)."""

    async def find_job(self, job_id: str, *, replay_foreign: bool = False) -> Job | None:
        """A job in memory, or an ended one restored from the journal."""
        ...

    async def finished_row(self, job_id: str) -> JobRow | None:
        """The journal row of a job that ended and left memory."""
        ...


__all__ = [
    "MAX_BULK_JOBS", "JobFilter", "JobReads", "matching_jobs", "shown_status", "BulkRunner",
    "fork_id",
]  # fmt: skip

log = logging.getLogger(__name__)

MAX_BULK_JOBS = 250_000
"""The most jobs one bulk action may act on: a filter matching more is refused (narrow it)."""

# Jobs per slice, by action: one slice is one engine event and one journal batch. A fork
# reads its source from the journal, a retry of a job that left memory replays it first. A
# cancel is cheapest: 1,000 hold the event loop ~0.1 s, and 100,000 take 9 s, not 10 (500).
_SLICE = {"cancel": 1000, "pause": 500, "resume": 500, "retry": 100, "fork": 50}
_ENDED = ("completed", "failed", "cancelled")
_ATTEMPTS = 5  # a slice that fails this many times in a row stops the bulk until a restart
_IN_FLIGHT = 2  # slices under way at once: one applied while the one before commits
# The namespace of the ids of a bulk's forks: one id per (bulk, source), so a fork made twice
# would be the same job.
_FORKS = uuid.UUID("5c4f8f0e-3b53-4b8e-9a3c-1f0d2c7e6a41")


@dataclass(frozen=True, slots=True)
class JobFilter:
    """Which top-level jobs a bulk action acts on: those matching every criterion given.

    `statuses` as jobs show them (`paused` is a running job that is paused); empty: any.
    `submitted_after` / `submitted_before` in unix seconds; `id_prefix` of the lower-case id;
    `meta`: keys the job's metadata must have, with these values.
    """

    workflow: str | None = None
    statuses: tuple[str, ...] = ()
    submitted_after: float | None = None
    submitted_before: float | None = None
    id_prefix: str | None = None
    meta: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The criteria given, as the bulk's record shows them."""
        found: dict[str, Any] = {
            "workflow": self.workflow,
            "status": list(self.statuses) or None,
            "submitted_after": self.submitted_after,
            "submitted_before": self.submitted_before,
            "id_prefix": self.id_prefix,
            "meta": self.meta,
        }
        return {key: value for key, value in found.items() if value is not None}

    def admits(self, job_id: str, workflow: str, status: str, submitted_at: float,
               meta: dict[str, Any] | None) -> bool:  # fmt: skip
        """True when a job with these facts matches every criterion."""
        if self.workflow is not None and workflow != self.workflow:
            return False
        if self.statuses and status not in self.statuses:
            return False
        if self.submitted_after is not None and submitted_at < self.submitted_after:
            return False
        if self.submitted_before is not None and submitted_at >= self.submitted_before:
            return False
        if self.id_prefix and not job_id.startswith(self.id_prefix):
            return False
        if self.meta:
            have = meta or {}
            return all(key in have and have[key] == value for key, value in self.meta.items())
        return True


def shown_status(job: Job) -> str:
    """A job's status as lists show it: `paused` for a running job that is paused."""
    return "paused" if job.paused else str(job.status)


async def matching_jobs(
    state: EngineState, journal: Journal, jobs: JobFilter, limit: int = MAX_BULK_JOBS + 1
) -> list[str]:
    """The ids of the top-level jobs `jobs` matches, oldest first: those in memory (running,
    queued, scheduled, paused, and ended ones not yet let go), then the ended ones in the
    journal. At most `limit`."""
    found: list[tuple[float, str]] = []
    for job in state.jobs.values():
        if job.parent is None and jobs.admits(
            job.id, job.workflow.name, shown_status(job), job.submitted_at, job.meta
        ):
            found.append((job.submitted_at, job.id))
    statuses = [s for s in jobs.statuses or _ENDED if s in _ENDED]
    if statuses:
        ended = await journal.ended_jobs(
            workflow=jobs.workflow, statuses=statuses, submitted_after=jobs.submitted_after,
            submitted_before=jobs.submitted_before, id_prefix=jobs.id_prefix,
            with_meta=bool(jobs.meta), limit=limit,
        )  # fmt: skip
        for row in ended:
            if row.id not in state.jobs and jobs.admits(
                row.id, row.workflow, row.status, row.submitted_at, row.meta
            ):
                found.append((row.submitted_at, row.id))
    found.sort()
    return [job_id for _, job_id in found[:limit]]


def fork_id(bulk_id: str, source: str) -> str:
    """The id of the fork bulk `bulk_id` makes of job `source`."""
    return str(uuid.uuid5(_FORKS, f"{bulk_id}:{source}"))


class BulkRunner:
    """Carries the bulk actions under way out, one slice at a time, in the background."""

    def __init__(
        self,
        pipeline: Pipeline,
        requests: JobReads,
        journal: Journal,
        clock: Callable[[], float],
        partitioning: Partitioning | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._requests = requests
        self._journal = journal
        self._now = clock
        # Partitioned: a bulk is one partition's part (`workflow_manager.cluster.bulkparts`).
        self._partitioning = partitioning
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def __repr__(self) -> str:
        return f"<BulkRunner {len(self._tasks)} under way>"

    def resume(self) -> None:
        """Carry on every bulk under way in memory (after recovery, or a rebuild)."""
        for bulk_id in self._pipeline.state.bulks:
            self.start(bulk_id)

    def start(self, bulk_id: str) -> None:
        """Carry bulk `bulk_id` out, unless that is under way already."""
        task = self._tasks.get(bulk_id)
        if task is None or task.done():
            self._tasks[bulk_id] = asyncio.create_task(self._run(bulk_id), name=f"bulk {bulk_id}")

    async def stop(self) -> None:
        """Stop carrying bulks out (a restart goes on from the journal)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _run(self, bulk_id: str) -> None:
        """Carry bulk `bulk_id` out: up to `_IN_FLIGHT` slices at a time, so the next one is
        applied while the journal commits the one before (they go in the engine's order).
        Stopped, it lets the slices in flight end first."""
        in_flight: deque[asyncio.Task[None]] = deque()
        try:
            await self._slices(bulk_id, in_flight)
        finally:
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)

    async def _slices(self, bulk_id: str, in_flight: deque[asyncio.Task[None]]) -> None:
        failures = 0
        planned = 0  # where the next slice starts: ahead of the bulk by the slices in flight
        while True:
            run = self._pipeline.state.bulks.get(bulk_id)
            if run is None and not in_flight:
                log.info("bulk %s finished", bulk_id)  # it left memory: the journal has it
                return
            if run is not None:
                planned = max(planned, run.next)
            if run is not None and planned < run.total and len(in_flight) < _IN_FLIGHT:
                ids = run.job_ids[planned : planned + _SLICE.get(run.action, 100)]
                # Prepared here, one after the other (reads of the journal, a retried job
                # brought back), so the slices reach the engine in order.
                sliced, revived = await self._prepare(run, planned, ids)
                in_flight.append(asyncio.create_task(self._process(sliced, revived)))
                planned += len(ids)
                continue
            if not in_flight:
                assert run is not None  # else it returned above
                planned = run.next  # a slice was refused: plan again from where it stands
                continue
            try:
                await in_flight.popleft()
                failures = 0
            except JournalError:
                return  # the manager stops; a restart goes on from the journal
            except (MessageFailed, BrokerError) as exc:
                # Memory was rebuilt from the journal (the bulk with it), or the broker is
                # away: the slices after it are refused; from where the bulk stands, again.
                failures += 1
                for task in in_flight:
                    with contextlib.suppress(Exception):
                        await task
                in_flight.clear()
                planned = 0
                if failures > _ATTEMPTS:
                    log.error("bulk %s stopped until a restart: %s", bulk_id, exc)
                    return
                log.warning("bulk %s: a slice failed (%s); trying it again", bulk_id, exc)
                await asyncio.sleep(0.5 * failures)  # a back-off before the same slice

    async def _prepare(
        self, run: BulkRun, start: int, ids: tuple[str, ...]
    ) -> tuple[BulkSlice, list[str]]:
        """The slice of the jobs `ids` (from `start`), and those of them a retry brought back."""
        at = self._now()
        revived = await self._bring_back(ids) if run.action == "retry" else []
        events = [await self._event(run, job_id, at) for job_id in ids]
        ended = await self._ended(ids) if run.action != "fork" else ()
        return BulkSlice(run.bulk_id, start, tuple(events), at, ended), revived

    async def _process(self, sliced: BulkSlice, revived: list[str]) -> None:
        """Run a slice through the pipeline (applied at once: nothing before it waits)."""
        result, sending = await self._pipeline.process(sliced)
        await sending
        for job_id in revived:
            job = self._pipeline.state.jobs.get(job_id)
            if job is not None and not job.is_running:
                await self._pipeline.let_go(job_id)  # brought back for a retry it did not get
        if result.refused is not None:
            log.info("bulk %s: %s", sliced.bulk_id, result.refused.reason)

    async def _ended(self, ids: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """(id, status) of the jobs of a slice that ended and left memory (the journal's)."""
        ended = []
        for job_id in ids:
            if job_id not in self._pipeline.state.jobs:
                row = await self._requests.finished_row(job_id)
                if row is not None:
                    ended.append((job_id, row.status))
        return tuple(ended)

    async def _bring_back(self, ids: tuple[str, ...]) -> list[str]:
        """The jobs of a retry slice that left memory, replayed back from the journal."""
        revived = []
        for job_id in ids:
            if job_id in self._pipeline.state.jobs:
                continue
            row = await self._requests.finished_row(job_id)
            if row is None or row.status != "failed":
                continue  # the engine refuses it, with why
            rows = await self._journal.replay_rows([row.root_id])
            if job_id not in self._pipeline.state.jobs:
                await self._pipeline.replay_for_retry(rows, job_id)
                revived.append(job_id)
        return revived

    async def _event(
        self, run: BulkRun, job_id: str, at: float
    ) -> CancelRequested | RetryRequested | PauseRequested | JobSubmitted:
        """The event of one job of a slice."""
        if run.action == "cancel":
            return CancelRequested(job_id, at)
        if run.action == "retry":
            return RetryRequested(job_id, at)
        if run.action in ("pause", "resume"):
            return PauseRequested(job_id, run.action == "pause", at)
        params = run.params or {}
        source = await self._requests.find_job(job_id, replay_foreign=True)
        new_id = fork_id(run.bulk_id, job_id)
        if source is None:  # the engine refuses it, with why
            seed = ForkSeed(job_id, params.get("from", ""), "gone (there is no such job)", {})
            return JobSubmitted(new_id, "", {}, at, fork=seed)
        submitted = await fork_submission(
            self._journal, source, params.get("from", ""), at, job_id=new_id,
            input=params.get("input"), definition=params.get("definition", "current"),
            children=params.get("children", "failed"),
        )  # fmt: skip
        if self._partitioning is None:
            return submitted
        # Partitioned: the fork runs in its source's partition, the part's (the one this
        # manager writes for); placed by its id it could fall in another manager's.
        partition = self._partitioning.of(bulk_journal_id(run.bulk_id))
        return dataclasses.replace(submitted, partition=partition)
