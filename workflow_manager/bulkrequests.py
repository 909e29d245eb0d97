"""The requests about bulk actions: act on every job a filter matches (journaled as one
`BulkRequested`, carried out in the background by `workflow_manager.bulkactions.BulkRunner`),
and where one stands. `BulkRequests` is held by `ApiRequests` as its `bulks`.

With several managers (`--partitions`), the API's `workflow_manager.api.clusterbulk` asks each
manager for the jobs in its memory that match (`local_matches`), splits them by partition, and
has each part journaled by the manager running its partition (`journal_part`); where a bulk
stands is then the sum of its parts (`bulk_status`), read from any manager.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workflow_manager.bulkactions import MAX_BULK_JOBS, JobFilter, matching_jobs, shown_status
from workflow_manager.bulkviews import bulk_view, bulk_view_of_rows, summed_view
from workflow_manager.cluster.bulkparts import MatchedJob, part_ids
from workflow_manager.engine import BulkRequested
from workflow_manager.engine.bulk import bulk_journal_id
from workflow_manager.errors import JobConflict, NotOwner
from workflow_manager.journal import Journal
from workflow_manager.journal.bulkreads import ENDED

if TYPE_CHECKING:
    from workflow_manager.cluster.ours import OurTrees
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.pipeline import Pipeline

__all__ = ["BulkRequests"]

log = logging.getLogger(__name__)


class BulkRequests:
    """Bulk actions asked of the orchestrator: journaled, and asked about."""

    def __init__(
        self,
        pipeline: Pipeline,
        trees: OurTrees,
        journal: Journal,
        clock: Callable[[], float],
        ownership: Ownership | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._trees = trees
        self._journal = journal
        self._now = clock
        self._ownership = ownership

    def __repr__(self) -> str:
        return f"<BulkRequests partitioned={self._ownership is not None}>"

    async def bulk(
        self,
        action: str,
        jobs: JobFilter,
        params: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> tuple[str | None, list[str]]:
        """Act on every top-level job `jobs` matches now (`action`: one of BULK_ACTIONS;
        `params`: a fork's options): the matched ids are journaled as one bulk action, carried
        out in the background (`BulkRunner`). Returns its id (None for a `dry_run`, which only
        matches) and the ids matched. JobConflict when the filter matches more than
        MAX_BULK_JOBS jobs. One manager's: with several, the API splits the bulk into parts
        (`workflow_manager.api.clusterbulk`)."""
        if self._ownership is not None:
            raise JobConflict("with --partitions, bulk actions are split by the API into parts")
        matched = await matching_jobs(self._pipeline.state, self._journal, jobs)
        if len(matched) > MAX_BULK_JOBS:
            raise JobConflict(
                f"the filter matches more than {MAX_BULK_JOBS:,} jobs; narrow it (by workflow, "
                "status, time or id prefix) and act in several bulks"
            )
        if dry_run:
            return None, matched
        bulk_id = self._trees.new_job_id()
        asked = BulkRequested(
            bulk_id, action, tuple(matched), self._now(), params or None, jobs.as_json()
        )
        result, sending = await self._pipeline.process(asked)
        if result.refused is not None:
            raise JobConflict(result.refused.reason)
        await sending
        log.info("bulk %s: %s %d jobs", bulk_id, action, len(matched))
        return bulk_id, matched

    async def bulk_status(self, bulk_id: str) -> dict[str, Any] | None:
        """Where bulk `bulk_id` stands: from memory, else from its journal rows; None if none.
        Partitioned, a bulk split into parts is the sum of the parts the journal has."""
        view = await self._one(bulk_id)
        if view is not None or self._ownership is None:
            return view
        parts = part_ids(bulk_id, self._ownership.partitioning)
        views = [found for part in parts.values() if (found := await self._one(part))]
        return summed_view(bulk_id, views)

    async def _one(self, bulk_id: str) -> dict[str, Any] | None:
        """Where one bulk (or part) stands: from memory, else from its journal rows."""
        run = self._pipeline.state.bulks.get(bulk_id)
        if run is not None:
            return bulk_view(run)
        rows = await self._journal.events_of(bulk_journal_id(bulk_id))
        return bulk_view_of_rows(bulk_id, rows)

    async def local_matches(
        self, jobs: JobFilter, *, ended: bool
    ) -> tuple[list[MatchedJob], list[int]]:
        """Partitioned: the top-level jobs in memory that `jobs` matches, of the partitions
        run here now, and those partitions; with the ended jobs of the journal (every
        partition's) when `ended`. At most MAX_BULK_JOBS + 1 of each."""
        assert self._ownership is not None
        of = self._ownership.partitioning.of
        runs = sorted(self._trees.runs_now())
        found: list[MatchedJob] = []
        for job in self._pipeline.state.jobs.values():
            if job.parent is None and (partition := of(job.id, job.partition)) in runs:
                if jobs.admits(
                    job.id, job.workflow.name, shown_status(job), job.submitted_at, job.meta
                ):
                    found.append(MatchedJob(job.id, partition, job.submitted_at))
        if ended:
            found.extend(await self._ended_matches(jobs))
        return found, runs

    async def _ended_matches(self, jobs: JobFilter) -> list[MatchedJob]:
        """The ended top-level jobs of the journal that `jobs` matches, with their partitions."""
        assert self._ownership is not None
        statuses = [s for s in jobs.statuses or ENDED if s in ENDED]
        if not statuses:
            return []
        rows = await self._journal.ended_jobs(
            workflow=jobs.workflow, statuses=statuses, submitted_after=jobs.submitted_after,
            submitted_before=jobs.submitted_before, id_prefix=jobs.id_prefix,
            with_meta=bool(jobs.meta), limit=MAX_BULK_JOBS + 1,
        )  # fmt: skip
        kept = [
            row for row in rows
            if jobs.admits(row.id, row.workflow, row.status, row.submitted_at, row.meta)
        ]  # fmt: skip
        placed = await self._journal.placements([row.id for row in kept])
        of = self._ownership.partitioning.of
        return [
            MatchedJob(row.id, of(row.id, placed.get(row.id)), row.submitted_at) for row in kept
        ]

    async def journal_part(
        self,
        part_id: str,
        partition: int,
        action: str,
        job_ids: tuple[str, ...],
        params: dict[str, Any] | None,
        filter: dict[str, Any] | None,
    ) -> bool:
        """Partitioned: journal part `part_id` of a bulk, the jobs `job_ids` of `partition`
        (which must be run here: else NotOwner, so the API asks its owner). False when the
        part exists already (asked again after an answer was lost): it is not journaled twice."""
        assert self._ownership is not None
        if self._ownership.partitioning.of(bulk_journal_id(part_id)) != partition:
            raise JobConflict(f"bulk part {part_id} is not filed in partition {partition}")
        if partition not in self._trees.runs_now():
            raise NotOwner(
                f"bulk part {part_id} is in partition {partition}, which another manager runs",
                partition,
            )
        if part_id in self._pipeline.state.bulks:
            return False
        if await self._journal.events_of(bulk_journal_id(part_id)):
            return False
        asked = BulkRequested(part_id, action, job_ids, self._now(), params or None, filter)
        result, sending = await self._pipeline.process(asked)
        if result.refused is not None:
            raise JobConflict(result.refused.reason)
        await sending
        log.info("bulk part %s: %s %d jobs of partition %d", part_id, action, len(job_ids),
                 partition)  # fmt: skip
        return True
