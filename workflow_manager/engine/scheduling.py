"""Schedules' rules: a firing of a paused schedule starts no job; and a firing of a schedule
with `overlap: skip` starts no job while that schedule's previous job has not ended. A firing
is a journaled `JobSubmitted` naming its schedule (its job id derived from the workflow, the
schedule and the fire time), so a firing seen twice is a duplicate submission, and a replay
decides the same. Pausing and resuming are journaled `SchedulePaused` events, so a replay
rebuilds the paused set too. A schedule exists from the first start that served it
(`ScheduleSeen`, journaled once: `ScheduleKnown`), so a start catches up only the firings
missed since then, never those from before the schedule was there.

A part (`workflow_manager.engine.extension.Part`); `pause_schedule` answers `SchedulePaused`,
`schedule_seen` answers `ScheduleSeen`.
"""

from __future__ import annotations

from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import (
    Ignored,
    Refused,
    ScheduleFired,
    ScheduleKnown,
    SchedulePauseSet,
)
from workflow_manager.engine.events import JobSubmitted, SchedulePaused, ScheduleSeen
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.state import Job

__all__ = ["Schedules", "pause_schedule", "schedule_seen"]


class Schedules(Part):
    """Whether a schedule's firing may start its job; which job a schedule last started."""

    def submission_refused(self, work: Work, sub: Submission) -> bool:
        """True (after reporting why) when a schedule's firing must not start a job."""
        if sub.event.schedule is None:
            return False
        return self._firing_skipped(work, sub.event, sub.workflow)

    def job_created(self, work: Work, job: Job, sub: Submission) -> None:
        """A firing started its job: the schedule's latest."""
        if sub.event.schedule is not None:
            self._fired(work, sub.event, sub.workflow, job.id)

    def _firing_skipped(self, work: Work, event: JobSubmitted, workflow: Workflow) -> bool:
        """True (after reporting why) when the firing must not start a job."""
        key = f"{workflow.name}/{event.schedule}"
        if key in work.state.schedules_paused:
            work.commands.append(Ignored(event.job_id, f"schedule {key} is paused"))
            return True
        spec = next((s for s in workflow.schedules if s.name == event.schedule), None)
        previous = work.state.jobs.get(work.state.schedule_runs.get(key, ""))
        if spec is None or spec.overlap != "skip" or previous is None or previous.is_settled:
            return False
        reason = f"schedule {key}: its previous job {previous.id} has not ended (overlap: skip)"
        work.commands.append(Ignored(event.job_id, reason))
        return True

    def _fired(self, work: Work, event: JobSubmitted, workflow: Workflow, job_id: str) -> None:
        """The firing started job `job_id`: the schedule's latest."""
        work.state.schedule_runs[f"{workflow.name}/{event.schedule}"] = job_id
        work.commands.append(ScheduleFired(workflow.name, event.schedule or "", job_id, work.at))


def pause_schedule(work: Work, event: SchedulePaused) -> None:
    """Pause or resume a schedule of a served workflow; Refused (not-found) for another."""
    key = f"{event.workflow}/{event.schedule}"
    definition = work.state.current.get(event.workflow)
    workflow = work.state.definitions.get(definition) if definition else None
    if workflow is None or all(s.name != event.schedule for s in workflow.schedules):
        known = sorted(
            f"{name}/{s.name}"
            for name, hash_ in work.state.current.items()
            for s in work.state.definitions[hash_].schedules
        )
        reason = (
            f"no schedule '{event.schedule}' in workflow '{event.workflow}'"
            f" (known: {', '.join(known) or 'none'})"
        )
        action = "pause" if event.paused else "resume"
        work.commands.append(Refused(key, action, reason, "not-found"))
        return
    if event.paused:
        work.state.schedules_paused.add(key)
    else:
        work.state.schedules_paused.discard(key)
    work.commands.append(SchedulePauseSet(event.workflow, event.schedule, event.paused, event.at))


def schedule_seen(work: Work, event: ScheduleSeen) -> None:
    """A start served a schedule: the first time, it exists from now (`ScheduleKnown`,
    journaled); later, and for a second row of the same schedule replayed, nothing changes."""
    key = f"{event.workflow}/{event.schedule}"
    if key in work.state.schedules_since:
        return
    work.state.schedules_since[key] = event.at
    work.commands.append(ScheduleKnown(event.workflow, event.schedule, event.at))
