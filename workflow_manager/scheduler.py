"""Fires the workflows' schedules: each firing is a journaled submission of a job whose id is
derived from the workflow, the schedule and the fire time (`schedule_job_id`).

So a firing seen twice (a restart, a catch-up of a firing that did run) is a duplicate the
orchestrator recognises, and the engine decides the overlap rule
(`workflow_manager.engine.scheduling`). At start the latest fire time of each schedule with
`catch_up` runs once, unless its job exists already, or the schedule did not exist then: a
schedule exists from the first start that served it (journaled through the engine), so a new
schedule, or a fresh journal, catches nothing up. Only the clock side is here (as
`workflow_manager.timekeeper` is for timers): whether a schedule is paused is the engine's
(journaled `SchedulePaused` events), so every firing, a catch-up too, goes in and the engine
decides whether it starts a job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from workflow_manager.config.models import Workflow
from workflow_manager.config.schedules import Schedule, schedule_job_id
from workflow_manager.errors import ManagerError

__all__ = ["Scheduler", "ScheduleView", "view_json"]

log = logging.getLogger(__name__)

# At most this many missed firings of each schedule are fired late: by a partition taken over
# (a failover lasts seconds: a schedule firing every second misses a few), or after a firing
# that took longer than the schedule's period.
_MAX_MISSED = 10


@dataclass(slots=True)
class ScheduleView:
    """One schedule as the API shows it."""

    workflow: str
    schedule: Schedule
    next_fire_at: float | None
    last_job: str | None
    paused: bool


class Firings(Protocol):
    """What the scheduler needs of the orchestrator."""

    @property
    def workflows(self) -> Mapping[str, Workflow]:
        """The workflows served, with their schedules."""
        ...

    async def fire_schedule(self, workflow: str, schedule: Schedule, job_id: str) -> bool:
        """Submit a firing as job `job_id`; False when it starts no job."""
        ...

    async def pause_schedule(self, workflow: str, schedule: str, paused: bool) -> None:
        """Pause or resume a schedule through the engine; JobNotFound for an unknown one."""
        ...

    async def schedule_status(self, workflow: str, schedule: str) -> tuple[bool, str | None]:
        """Whether a schedule is paused, and the job it last started."""
        ...

    async def schedule_since(self, workflow: str, schedule: str) -> float:
        """Since when a schedule exists (journaled by the first start that served it)."""
        ...


class Scheduler:
    """One task per schedule: sleep until the next fire time, then submit its job."""

    def __init__(self, orchestrator: Firings, clock: Callable[[], float]) -> None:
        self._orchestrator = orchestrator
        self._now = clock
        self._tasks: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        return f"<Scheduler {len(self._tasks)} schedules>"

    def _schedules(self) -> list[tuple[Workflow, Schedule]]:
        workflows = self._orchestrator.workflows.values()
        return [(wf, schedule) for wf in workflows for schedule in wf.schedules]

    async def start(self) -> None:
        """Catch up what was missed since each schedule exists (the engine skips a paused
        schedule's firing), and start each schedule's task."""
        for wf, schedule in self._schedules():
            since = await self._orchestrator.schedule_since(wf.name, schedule.name)
            missed = schedule.missed_fire(self._now(), since) if schedule.catch_up else None
            if missed is not None:
                await self._fire(wf, schedule, missed)
            task = asyncio.create_task(self._run(wf, schedule), name=f"schedule {schedule.name}")
            self._tasks.append(task)

    async def fire_missed(self, since: float) -> None:
        """Fire every fire time after `since` up to now (a partition just taken over: its
        firings while no manager ran it). Each goes in as any firing: those of another
        partition, or that ran already, start nothing."""
        now = self._now()
        for wf, schedule in self._schedules():
            fire_at = schedule.next_fire(since)
            for _ in range(_MAX_MISSED):
                if fire_at > now:
                    break
                await self._fire(wf, schedule, fire_at)
                fire_at = schedule.next_fire(fire_at)

    def close(self) -> None:
        """Stop firing (the next start catches up)."""
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    async def _run(self, wf: Workflow, schedule: Schedule) -> None:
        fire_at = schedule.next_fire(self._now())
        while True:
            # A plain wait: the firing it ends in is journaled, with an id a restart derives again.
            await asyncio.sleep(max(0.0, fire_at - self._now()))
            try:
                await self._fire(wf, schedule, fire_at)
            except ManagerError as exc:
                log.error("schedule %s/%s: firing failed: %s", wf.name, schedule.name, exc)
            fire_at = self._after(schedule, fire_at)

    def _after(self, schedule: Schedule, fired_at: float) -> float:
        """The fire time after `fired_at`, even when it came due while that firing was being
        made (a slow commit must not lose the next firing); after a stall of more than
        `_MAX_MISSED` firings, the next one from now."""
        following = schedule.next_fire(fired_at)
        due, now = following, self._now()
        for _ in range(_MAX_MISSED):
            if due > now:
                return following
            due = schedule.next_fire(due)
        return schedule.next_fire(now)

    async def _fire(self, wf: Workflow, schedule: Schedule, fire_at: float) -> None:
        job_id = schedule_job_id(wf.name, schedule.name, fire_at)
        await self._orchestrator.fire_schedule(wf.name, schedule, job_id)

    async def views(self) -> list[ScheduleView]:
        """Every schedule with its next fire time (None while paused) and its last job."""
        now = self._now()
        return [await self._view(wf.name, schedule, now) for wf, schedule in self._schedules()]

    async def _view(self, workflow: str, schedule: Schedule, now: float) -> ScheduleView:
        paused, last_job = await self._orchestrator.schedule_status(workflow, schedule.name)
        next_at = None if paused else schedule.next_fire(now)
        return ScheduleView(workflow, schedule, next_at, last_job, paused)

    async def set_paused(self, workflow: str, name: str, paused: bool) -> ScheduleView:
        """Pause or resume a schedule (an engine event, journaled); JobNotFound for an unknown
        schedule."""
        await self._orchestrator.pause_schedule(workflow, name, paused)
        wf = self._orchestrator.workflows[workflow]
        schedule = next(s for s in wf.schedules if s.name == name)
        return await self._view(workflow, schedule, self._now())


def view_json(view: ScheduleView) -> dict[str, Any]:
    """A schedule as `GET /api/schedules` answers it."""
    schedule = view.schedule
    return {
        "workflow": view.workflow,
        "name": schedule.name,
        "cron": schedule.cron,
        "every": schedule.every,
        "timezone": schedule.timezone,
        "catch_up": schedule.catch_up,
        "overlap": schedule.overlap,
        "next_fire_at": view.next_fire_at,
        "last_job": view.last_job,
        "paused": view.paused,
    }
