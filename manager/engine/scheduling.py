"""Schedules' overlap rule: a firing of a schedule with `overlap: skip` starts no job while
that schedule's previous job has not ended. A firing is a journaled `JobSubmitted` naming its
schedule (its job id derived from the workflow, the schedule and the fire time), so a firing
seen twice is a duplicate submission, and a replay decides the same.

A part of the engine's `Transition` (see `manager.engine.work`).
"""

from __future__ import annotations

from manager.config.models import Workflow
from manager.engine.commands import Ignored, ScheduleFired
from manager.engine.events import JobSubmitted
from manager.engine.work import Work

__all__ = ["ScheduleRules"]


class ScheduleRules:
    """Whether a schedule's firing may start its job; which job a schedule last started."""

    def _firing_skipped(self: Work, event: JobSubmitted, workflow: Workflow) -> bool:
        """True (after reporting why) when the firing must not start a job."""
        key = f"{workflow.name}/{event.schedule}"
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
