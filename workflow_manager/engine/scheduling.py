"""Schedules' rules: a firing of a paused schedule starts no job; and a firing of a schedule
with `overlap: skip` starts no job while that schedule's previous job has not ended. A firing
is a journaled `JobSubmitted` naming its schedule (its job id derived from the workflow, the
schedule and the fire time), so a firing seen twice is a duplicate submission, and a replay
decides the same. Pausing and resuming are journaled `SchedulePaused` events, so a replay
rebuilds the paused set too.

A part of the engine's `Transition` (see `workflow_manager.engine.work`).
"""

from __future__ import annotations

from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import Ignored, Refused, ScheduleFired, SchedulePauseSet
from workflow_manager.engine.events import JobSubmitted, SchedulePaused
from workflow_manager.engine.work import Work

__all__ = ["ScheduleRules"]


class ScheduleRules:
    """Whether a schedule's firing may start its job; which job a schedule last started."""

    def _firing_skipped(self: Work, event: JobSubmitted, workflow: Workflow) -> bool:
        """True (after reporting why) when the firing must not start a job."""
        key = f"{workflow.name}/{event.schedule}"
        if key in self.state.schedules_paused:
            self.commands.append(Ignored(event.job_id, f"schedule {key} is paused"))
            return True
        spec = next((s for s in workflow.schedules if s.name == event.schedule), None)
        previous = self.state.jobs.get(self.state.schedule_runs.get(key, ""))
        if spec is None or spec.overlap != "skip" or previous is None or previous.is_settled:
            return False
        reason = f"schedule {key}: its previous job {previous.id} has not ended (overlap: skip)"
        self.commands.append(Ignored(event.job_id, reason))
        return True

    def _fired(self: Work, event: JobSubmitted, workflow: Workflow, job_id: str) -> None:
        """The firing started job `job_id`: the schedule's latest."""
        self.state.schedule_runs[f"{workflow.name}/{event.schedule}"] = job_id
        self.commands.append(ScheduleFired(workflow.name, event.schedule or "", job_id, self.at))

    def pause_schedule(self: Work, event: SchedulePaused) -> None:
        """Pause or resume a schedule of a served workflow; Refused (not-found) for another."""
        key = f"{event.workflow}/{event.schedule}"
        definition = self.state.current.get(event.workflow)
        workflow = self.state.definitions.get(definition) if definition else None
        if workflow is None or all(s.name != event.schedule for s in workflow.schedules):
            known = sorted(
                f"{name}/{s.name}"
                for name, hash_ in self.state.current.items()
                for s in self.state.definitions[hash_].schedules
            )
            reason = (
                f"no schedule '{event.schedule}' in workflow '{event.workflow}'"
                f" (known: {', '.join(known) or 'none'})"
            )
            action = "pause" if event.paused else "resume"
            self.commands.append(Refused(key, action, reason, "not-found"))
            return
        if event.paused:
            self.state.schedules_paused.add(key)
        else:
            self.state.schedules_paused.discard(key)
        self.commands.append(
            SchedulePauseSet(event.workflow, event.schedule, event.paused, event.at)
        )
