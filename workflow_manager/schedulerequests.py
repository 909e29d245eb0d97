"""The requests about schedules: fire one (the scheduler's firings), pause or resume one, ask
whether it is paused and which job it last started, and since when it exists.

`ScheduleRequests` (held by `ApiRequests` as its `schedules`, and by the scheduler): each
request becomes an engine event run through the pipeline (`Pipeline.process`), as the API's
other requests do; with several managers, a pause or resume another manager committed is
applied to our memory first (`Pipeline.catch_up`), so a firing meets the journal's state.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from workflow_manager.config import Workflow
from workflow_manager.config.schedules import Schedule
from workflow_manager.engine import JobSubmitted, SchedulePaused, ScheduleSeen
from workflow_manager.errors import JobNotFound, NotOwner
from workflow_manager.journal import JobRow, Journal
from workflow_manager.recorder import (
    fired_journal_id,
    schedule_journal_id,
    since_journal_id,
    to_event,
)

if TYPE_CHECKING:
    from workflow_manager.cluster.ours import OurTrees
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.pipeline import Pipeline

__all__ = ["ScheduleRequests"]

log = logging.getLogger(__name__)


class ScheduleRequests:
    """A schedule's requests of the orchestrator: fired, paused or resumed, asked about."""

    def __init__(
        self,
        pipeline: Pipeline,
        trees: OurTrees,
        workflows: Mapping[str, Workflow],
        journal: Journal,
        clock: Callable[[], float],
        finished_row: Callable[[str], Awaitable[JobRow | None]],
        ownership: Ownership | None = None,
    ) -> None:
        self.workflows = workflows
        self._pipeline = pipeline
        self._trees = trees
        self._journal = journal
        self._now = clock
        self._finished_row = finished_row
        self._ownership = ownership

    def __repr__(self) -> str:
        count = sum(len(workflow.schedules) for workflow in self.workflows.values())
        return f"<ScheduleRequests schedules={count}>"

    async def fire_schedule(self, workflow: str, schedule: Schedule, job_id: str) -> bool:
        """Submit a schedule's firing as job `job_id`; False when it starts no job (it ran
        already, or its previous job still runs and the schedule skips overlaps)."""
        submitted = JobSubmitted(job_id, workflow, dict(schedule.payload), self._now())
        event = dataclasses.replace(self._pipeline.pinned(submitted), schedule=schedule.name)
        event, _ = await self._trees.placed(event, named=True)
        if not self._trees.owns(job_id, event.partition):
            return False  # partitioned: the manager holding this firing's partition fires it
        if job_id in self._pipeline.state.jobs or await self._finished_row(job_id) is not None:
            return False
        await self._catch_up_pause(workflow, schedule.name)
        result, sending = await self._pipeline.process(event)
        await sending
        return result.fired is not None and result.fired.job_id == job_id

    async def _catch_up_pause(self, workflow: str, schedule: str) -> None:
        """Partitioned: another manager may have paused or resumed the schedule since we
        replayed its rows; replay its latest pause or resume row into our engine too (it is
        committed: not journaled again), so our firing meets the state the journal has."""
        if self._ownership is None:
            return
        row = await self._journal.latest_row(schedule_journal_id(workflow, schedule))
        if row is None:
            return
        event = to_event(row)
        paused = f"{workflow}/{schedule}" in self._pipeline.state.schedules_paused
        if isinstance(event, SchedulePaused) and event.paused != paused:
            await self._pipeline.catch_up(event, f"schedule {workflow}/{schedule}")

    async def pause_schedule(self, workflow: str, schedule: str, paused: bool) -> None:
        """Pause (`paused`) or resume a schedule, journaled; JobNotFound for an unknown one.

        Partitioned, a manager running no partition (a standby) cannot commit: NotOwner.
        """
        if self._ownership is not None and not self._trees.runs_now():
            home = self._ownership.partitioning.of(schedule_journal_id(workflow, schedule))
            raise NotOwner(
                "this manager runs no partition now (a standby); ask one that does", home
            )
        event = SchedulePaused(workflow, schedule, paused, self._now())
        result, sending = await self._pipeline.process(event)
        if result.refused is not None:
            raise JobNotFound(result.refused.reason)
        await sending
        log.info("schedule %s/%s %s", workflow, schedule, "paused" if paused else "resumed")

    async def schedule_status(self, workflow: str, schedule: str) -> tuple[bool, str | None]:
        """Whether a schedule is paused, and the job it last started: the journal's latest
        `fired` row (committed with its firing), so it survives a restart."""
        row = await self._journal.latest_row(fired_journal_id(workflow, schedule))
        last_job = row.meta.get("job") if row is not None else None
        await self._catch_up_pause(workflow, schedule)
        return f"{workflow}/{schedule}" in self._pipeline.state.schedules_paused, last_job

    async def schedule_since(self, workflow: str, schedule: str) -> float:
        """Since when a schedule exists: the first start that served it, journaled then
        through the engine (`ScheduleSeen`); now, for a schedule no start served before.

        Partitioned, a manager running no partition (a standby) journals nothing: it reads
        the journal's record, if any (it fires nothing while it runs no partition)."""
        since = self._pipeline.state.schedules_since.get(f"{workflow}/{schedule}")
        if since is not None:
            return since
        seen = ScheduleSeen(workflow, schedule, self._now())
        if self._ownership is not None and not self._trees.runs_now():
            row = await self._journal.latest_row(since_journal_id(workflow, schedule))
            return row.at if row is not None else seen.at
        _, sending = await self._pipeline.process(seen)
        await sending
        return seen.at
