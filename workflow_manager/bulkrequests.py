"""The requests about bulk actions: act on every job a filter matches (journaled as one
`BulkRequested`, carried out in the background by `workflow_manager.bulkactions.BulkRunner`),
and where one stands. `BulkRequests` is held by `ApiRequests` as its `bulks`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workflow_manager.bulkactions import MAX_BULK_JOBS, JobFilter, matching_jobs
from workflow_manager.bulkviews import bulk_view, bulk_view_of_rows
from workflow_manager.engine import BulkRequested
from workflow_manager.engine.bulk import bulk_journal_id
from workflow_manager.errors import JobConflict
from workflow_manager.journal import Journal

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
        matches) and the ids matched. JobConflict with several managers (not supported yet) or
        when the filter matches more than MAX_BULK_JOBS jobs."""
        if self._ownership is not None:
            raise JobConflict(
                "bulk actions act on one manager's jobs; with --partitions, act on jobs one by "
                "one (a later version acts across the cluster)"
            )
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
        """Where bulk `bulk_id` stands: from memory, else from its journal rows; None if none."""
        run = self._pipeline.state.bulks.get(bulk_id)
        if run is not None:
            return bulk_view(run)
        rows = await self._journal.events_of(bulk_journal_id(bulk_id))
        return bulk_view_of_rows(bulk_id, rows)
