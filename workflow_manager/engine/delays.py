"""Delayed starts: a job submitted with a `not_before` in the future waits as `scheduled`.

A part of the engine's `Transition` (see `workflow_manager.engine.work`). The job exists at once
(so it can be read, cancelled, and its id is taken); a journaled timer (`timers.job_start`)
starts it, so a replay after a crash starts it once, at the same time.
"""

from __future__ import annotations

from workflow_manager.engine import timers
from workflow_manager.engine.commands import JobScheduled
from workflow_manager.engine.state import Job, JobStatus
from workflow_manager.engine.work import Work

__all__ = ["DelayedStarts"]


class DelayedStarts:
    """Scheduling a job for later, starting it when its timer fires, cancelling it before."""

    def _schedule(self: Work, job: Job, start_at: float) -> None:
        """Hold a new top-level job until `start_at`."""
        job.status = JobStatus.SCHEDULED
        job.start_at = start_at
        self._start_timer(timers.job_start(job.id), start_at)
        self.commands.append(
            JobScheduled(
                job.id,
                job.workflow.name,
                job.workflow.content_hash,
                job.flow.name,
                job.payload,
                job.submitted_at,
                start_at,
                self.at,
                job.trace_id,
            )  # fmt: skip
        )

    def _start_scheduled(self: Work, job: Job) -> None:
        """The start time of a scheduled job has come: it runs from now."""
        if job.status is not JobStatus.SCHEDULED:
            return
        if job.scopes:
            self._enqueue(job)  # under a concurrency limit: it queues from now
            return
        job.status = JobStatus.RUNNING
        self.commands.append(self.started(job))
        self.ready.extend((job, run) for run in job.steps.values() if run.waiting_on == 0)
        if job.workflow.timeout is not None:
            self._start_timer(timers.job_timeout(job.id), self.at + job.workflow.timeout)

    def _cancel_scheduled(self: Work, job: Job) -> None:
        """Cancel a job before it started: it never runs, and no on_cancel step runs either."""
        self._cancel_timer(timers.job_start(job.id))
        job.status = JobStatus.CANCELLED
        job.error = {"step": None, "message": "cancelled before it started"}
        job.finished_at = self.at
        self._settle(job)
