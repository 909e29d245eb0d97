"""What the journal holds for memory: the engine state of our running jobs, and the messages
not confirmed yet. Read at a start, after a failed message (`Pipeline.rebuild_after_failure`)
and when partitions are taken over (`PartitionRuns.adopt`); it changes nothing itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING

from workflow_manager.config import Workflow
from workflow_manager.engine import (
    EngineState,
    JobsRecalled,
    RateHistory,
    RecalledJob,
    apply,
    replay,
)
from workflow_manager.engine.debouncing import window_workflows
from workflow_manager.journal import EventRow, Journal
from workflow_manager.ratehistory import rate_history
from workflow_manager.recorder import (
    pending_message,
    schedule_journal_id,
    since_journal_id,
    to_event,
)
from workflow_manager.transport import Outbound

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.cluster.placement import Placement
    from workflow_manager.settings import ManagerSettings

__all__ = ["Recovery"]


class Recovery:
    """Reads of the journal that make memory: our running jobs replayed, our unconfirmed
    messages. Partitioned, only those of our partitions (or of the ones asked for)."""

    def __init__(
        self,
        workflows: Mapping[str, Workflow],
        settings: ManagerSettings,
        journal: Journal,
        ownership: Ownership | None,
        placement: Placement | None,
    ) -> None:
        self._workflows = workflows
        self._settings = settings
        self._journal = journal
        self._ownership = ownership
        self._placement = placement

    def __repr__(self) -> str:
        return f"<Recovery partitioned={self._ownership is not None}>"

    def blank(self) -> EngineState:
        """An engine state with today's definitions and no job (memory before a recovery)."""
        settings = self._settings
        return EngineState.from_workflows(
            self._workflows,
            (),
            settings.max_running_jobs,
            settings.max_fanout_bytes,
            limits=settings.job_limits,
            partitions=self._partition_count(),
        )

    async def save_definitions(self) -> None:
        """Store today's definitions, so a job pinned to one can be replayed after it changed."""
        await self._journal.save_definitions(
            (wf.content_hash, wf.name, wf.model_dump_json(by_alias=True, exclude_defaults=True))
            for wf in self._workflows.values()
        )

    async def state(self, now: float, partitions: set[int] | None = None) -> EngineState:
        """The engine state the journal holds at `now`: the ended jobs whose rules outlive
        them recalled, rate limits' recent starts counted, then our running jobs' rows (of
        `partitions`, when partitioned; None: all we hold) replayed through the engine, over
        every stored definition (a running job may be pinned to an old one)."""
        stored = await self._journal.definitions()
        pinned = [Workflow.model_validate_json(text) for _, text in stored.values()]
        settings = self._settings
        state = EngineState.from_workflows(
            self._workflows,
            pinned,
            settings.max_running_jobs,
            settings.max_fanout_bytes,
            limits=settings.job_limits,
            partitions=self._partition_count(),
        )
        recalled = await self.recalled(now, partitions)
        if recalled.jobs:
            apply(state, recalled)
        history = await self.rate_history(now, partitions)
        if history.starts or history.jobs:
            apply(state, history)
        roots = await self.running_roots(partitions)
        replay(state, map(to_event, await self.rows_to_replay(roots, partitions)))
        return state

    async def rate_history(self, now: float, partitions: set[int] | None = None) -> RateHistory:
        """The starts within their rate windows at `now` of the jobs of our partitions (or of
        `partitions`): a window outlives a restart, and a take-over, whoever started them."""
        return await rate_history(
            self._journal, self._workflows.values(), now, self._selector(partitions)
        )

    async def recalled(self, now: float, partitions: set[int] | None = None) -> JobsRecalled:
        """The ended jobs (of our partitions, or of `partitions`) whose rules outlive them at
        `now`: those of a leading debounce submitted within its period (its window may still
        be open). Applied before the running jobs' rows."""
        found: list[RecalledJob] = []
        for workflow, period_s in window_workflows(self._workflows.values()).items():
            for row in await self._journal.ended_since(workflow, now - period_s):
                found.append(RecalledJob(row.id, workflow, row.payload, row.meta, row.submitted_at))
        if found and self._ownership is not None:
            ours = set(await self._in_partitions([job.job_id for job in found], partitions))
            found = [job for job in found if job.job_id in ours]
        return JobsRecalled(tuple(found), now)

    async def rows_to_replay(
        self, roots: list[str], partitions: set[int] | None = None
    ) -> list[EventRow]:
        """The replayed rows of the trees under `roots` and of the bulks under way (of our
        partitions, or of `partitions`), then each schedule's latest pause or resume row and
        the row saying since when it exists.

        Trees first: each firing among them started its job when applied (a firing the engine
        ignored has no tree), so it must start again whatever pause the journal holds before
        it; one can, when another manager journaled it between our reading the schedule as
        running and our committing the firing."""
        bulks = await self._journal.bulks_under_way()
        if self._ownership is not None:  # each bulk (a part of one) is filed in a partition
            bulks = await self._in_partitions(bulks, partitions)
        roots = [*roots, *bulks]
        rows = await self._journal.replay_rows(roots)
        journal_ids = [
            journal_id(wf.name, schedule.name)
            for wf in self._workflows.values()
            for schedule in wf.schedules
            for journal_id in (schedule_journal_id, since_journal_id)  # since: when it began
        ]
        if not journal_ids:
            return rows
        schedule_rows = await self._journal.schedule_rows(journal_ids)
        return rows + schedule_rows

    async def running_roots(self, partitions: set[int] | None = None) -> list[str]:
        """The running top-level jobs of our partitions (or of `partitions`); all of them,
        unpartitioned. Oldest first."""
        roots = await self._journal.running_roots()
        if self._ownership is None:
            return roots
        return await self._in_partitions(roots, partitions)

    async def pending(self, partitions: set[int] | None = None) -> list[Outbound]:
        """Messages the journal holds as unconfirmed (of our partitions, or of `partitions`)."""
        rows = await self._journal.pending_outbound()
        if self._ownership is not None:
            roots = {row.root_id for row in rows if row.root_id is not None}
            kept = set(await self._in_partitions(roots, partitions))
            rows = [row for row in rows if row.root_id is None or row.root_id in kept]
        return [pending_message(row) for row in rows]

    def _selector(
        self, partitions: set[int] | None
    ) -> Callable[[Collection[str]], Awaitable[Mapping[str, int]]] | None:
        """What keeps the job trees of our partitions (or of `partitions`), with the partition
        of each; None, unpartitioned."""
        if self._ownership is None:
            return None
        ownership, placement = self._ownership, self._placement
        assert placement is not None

        async def select(roots: Collection[str]) -> Mapping[str, int]:
            wanted = partitions if partitions is not None else set(ownership.held)
            return await placement.partitions(roots, wanted)

        return select

    def _partition_count(self) -> int | None:
        """The number of partitions, when several managers share the jobs."""
        return None if self._ownership is None else self._ownership.partitioning.count

    async def _in_partitions(
        self, roots: Collection[str], partitions: set[int] | None
    ) -> list[str]:
        """Those of the top-level jobs `roots` in our partitions (or in `partitions`)."""
        assert self._ownership is not None and self._placement is not None
        wanted = partitions if partitions is not None else set(self._ownership.held)
        return await self._placement.select(roots, wanted)
