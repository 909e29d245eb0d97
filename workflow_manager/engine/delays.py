"""Delayed starts: a job submitted with a `not_before` in the future waits as `scheduled`.

A part (`workflow_manager.engine.extension.Part`). The job exists at once (so it can be read,
cancelled, and its id is taken); a journaled timer (`timers.JobStart`)
starts it, so a replay after a crash starts it once, at the same time. When it comes due, a
job under limits queues for them, and one of a workflow with `rate` waits for its turn.
"""

from __future__ import annotations

from workflow_manager.engine.admission import enqueue
from workflow_manager.engine.commands import JobScheduled
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.jobrates import hold_start
from workflow_manager.engine.jobs import cancel_unstarted, start_job
from workflow_manager.engine.state import Job, JobStatus
from workflow_manager.engine.timers import JobStart, Timer

__all__ = ["DelayedStarts"]


class DelayedStarts(Part):
    """Scheduling a job for later, starting it when its timer fires, cancelling it before."""

    timers = (JobStart,)

    def submission_prepared(self, work: Work, sub: Submission) -> None:
        """A `not_before` in the future: the job starts then (or later, when a part set a
        later start: a trailing debounce window's end)."""
        not_before = sub.event.not_before
        if not_before is not None and not_before > (sub.start_at or work.at):
            sub.start_at = not_before

    def start_held(self, work: Work, job: Job, sub: Submission) -> bool:
        """Hold a new job until its start time (then it may queue, if limited)."""
        if sub.start_at is None:
            return False
        self._schedule(work, job, sub.start_at)
        return True

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A delayed job's start time has come."""
        match timer:
            case JobStart() if job is not None:
                self._start_scheduled(work, job)
            case _:
                pass

    def cancel_held(self, work: Work, job: Job) -> bool:
        """Cancel a job before its start time: it never runs; its on_cancel steps do."""
        if job.status is not JobStatus.SCHEDULED:
            return False
        work.cancel_timer(JobStart(job.id))
        cancel_unstarted(work, job, "cancelled before it started")
        return True

    def _schedule(self, work: Work, job: Job, start_at: float) -> None:
        """Hold a new top-level job until `start_at`."""
        job.status = JobStatus.SCHEDULED
        job.start_at = start_at
        work.start_timer(JobStart(job.id), start_at)
        work.commands.append(
            JobScheduled(
                job.id,
                job.workflow.name,
                job.workflow.content_hash,
                job.flow.name,
                job.payload,
                job.submitted_at,
                start_at,
                work.at,
                job.trace_id,
            )  # fmt: skip
        )

    def _start_scheduled(self, work: Work, job: Job) -> None:
        """The start time of a scheduled job has come: it runs from now."""
        if job.status is not JobStatus.SCHEDULED:
            return
        if job.scopes:
            enqueue(work, job)  # under a concurrency limit: it queues from now
            return
        if hold_start(work, job):
            return  # the workflow's rate: it waits for its turn from now
        job.status = JobStatus.RUNNING
        start_job(work, job)
        work.job_running(job)
