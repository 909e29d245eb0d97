"""Fires the workflows' schedules: each firing is a journaled submission of a job whose id is
derived from the workflow, the schedule and the fire time (`schedule_job_id`).

So a firing seen twice (a restart, a catch-up of a firing that did run) is a duplicate the
orchestrator recognises, and the engine decides the overlap rule (`manager.engine.scheduling`).
At start the latest fire time of each schedule with `catch_up` runs once, unless its job
exists already. Pausing and resuming are journaled rows (kind `schedule`) read back at start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from manager.config.models import Workflow
from manager.config.schedules import Schedule, schedule_job_id
from manager.errors import JobNotFound, ManagerError
from manager.journal import Batch, EventRow, Journal
from manager.journal.records import EventKind

__all__ = ["Scheduler", "ScheduleView", "view_json"]

log = logging.getLogger(__name__)


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

    @property
    def journal(self) -> Journal:
        """Where pausing and resuming are kept."""
        ...

    async def fire_schedule(self, workflow: str, schedule: Schedule, job_id: str) -> bool:
        """Submit a firing as job `job_id`; False when it starts no job."""
        ...


def _journal_id(workflow: str, name: str) -> str:
    """Where a schedule's pause and resume rows are filed in the journal."""
    return f"schedule:{workflow}/{name}"


class Scheduler:
    """One task per schedule: sleep until the next fire time, then submit its job."""

    def __init__(self, orchestrator: Firings, clock: Callable[[], float]) -> None:
        self._orchestrator = orchestrator
        self._now = clock
        self._tasks: list[asyncio.Task[None]] = []
        self._paused: dict[tuple[str, str], bool] = {}
        self._last_job: dict[tuple[str, str], str] = {}

    def __repr__(self) -> str:
        return f"<Scheduler {len(self._tasks)} schedules>"

    def _schedules(self) -> list[tuple[Workflow, Schedule]]:
        workflows = self._orchestrator.workflows.values()
        return [(wf, schedule) for wf in workflows for schedule in wf.schedules]

    async def start(self) -> None:
        """Read the pause states, catch up what was missed, and start each schedule's task."""
        journal = self._orchestrator.journal
        for wf, schedule in self._schedules():
            rows = await journal.events_of(_journal_id(wf.name, schedule.name))
            paused = [row.meta.get("paused") for row in rows if row.kind == EventKind.SCHEDULE]
            self._paused[(wf.name, schedule.name)] = bool(paused and paused[-1])
        for wf, schedule in self._schedules():
            if schedule.catch_up and not self._paused[(wf.name, schedule.name)]:
                await self._fire(wf, schedule, schedule.last_fire(self._now()))
            task = asyncio.create_task(self._run(wf, schedule), name=f"schedule {schedule.name}")
            self._tasks.append(task)

    def close(self) -> None:
        """Stop firing (the next start catches up)."""
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    async def _run(self, wf: Workflow, schedule: Schedule) -> None:
        while True:
            fire_at = schedule.next_fire(self._now())
            # A plain wait: the firing it ends in is journaled, with an id a restart derives again.
            await asyncio.sleep(max(0.0, fire_at - self._now()))
            if self._paused.get((wf.name, schedule.name)):
                continue
            try:
                await self._fire(wf, schedule, fire_at)
            except ManagerError as exc:
                log.error("schedule %s/%s: firing failed: %s", wf.name, schedule.name, exc)

    async def _fire(self, wf: Workflow, schedule: Schedule, fire_at: float) -> None:
        job_id = schedule_job_id(wf.name, schedule.name, fire_at)
        started = await self._orchestrator.fire_schedule(wf.name, schedule, job_id)
        if started:
            self._last_job[(wf.name, schedule.name)] = job_id

    def views(self) -> list[ScheduleView]:
        """Every schedule with its next fire time (None while paused) and its last job."""
        now = self._now()
        views = []
        for wf, schedule in self._schedules():
            key = (wf.name, schedule.name)
            paused = self._paused.get(key, False)
            next_at = None if paused else schedule.next_fire(now)
            views.append(ScheduleView(wf.name, schedule, next_at, self._last_job.get(key), paused))
        return views

    async def set_paused(self, workflow: str, name: str, paused: bool) -> ScheduleView:
        """Pause or resume a schedule (journaled); JobNotFound for an unknown schedule."""
        key = (workflow, name)
        if key not in self._paused:
            known = ", ".join(f"{w}/{n}" for w, n in self._paused) or "none"
            raise JobNotFound(f"no schedule '{name}' in workflow '{workflow}' (known: {known})")
        row = EventRow(
            at=self._now(),
            kind=EventKind.SCHEDULE,
            job_id=_journal_id(workflow, name),
            meta={"paused": paused},
        )
        await self._orchestrator.journal.append(Batch(events=[row]))
        self._paused[key] = paused
        log.info("schedule %s/%s %s", workflow, name, "paused" if paused else "resumed")
        return next(v for v in self.views() if (v.workflow, v.schedule.name) == key)


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
