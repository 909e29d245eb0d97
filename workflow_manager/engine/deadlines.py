"""Deadlines and retry waits: a step attempt's reply deadline, the wait before its retry, and
a whole job's `timeout`.

Two parts (`workflow_manager.engine.extension.Part`). A step's deadline is armed when an attempt
is sent and fails that attempt when it fires (the step's policy may retry it: `failures`); a
retry wait's end dispatches the next attempt. A job's deadline is armed when the top-level job
runs, dropped when it stops, and fails the job when it fires.
"""

from __future__ import annotations

from workflow_manager.config.models import Workflow
from workflow_manager.engine.extension import Part, Work
from workflow_manager.engine.state import Job, StepRun, StepStatus
from workflow_manager.engine.timers import JobTimeout, RetryDue, StepTimeout, Timer

__all__ = ["JobDeadlines", "Retries"]


class Retries(Part):
    """A step attempt's reply deadline, and the end of the wait before its retry."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a step whose policy has a `timeout_s` (its timers are handled
        for all)."""
        return any(policy.timeout_s is not None for policy in workflow.policies.values())

    timers = (StepTimeout, RetryDue)

    def dispatched(self, work: Work, job: Job, run: StepRun) -> None:
        """An attempt was sent: arm its reply deadline, if its policy has one."""
        timeout_s = job.workflow.policy(job.flow_of(run.name), run.name).timeout_s
        if timeout_s is not None:
            work.start_timer(StepTimeout(job.id, run.name, run.attempt), work.at + timeout_s)

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """No reply in time fails the attempt; a retry wait's end sends the next attempt."""
        if job is None:
            return
        match timer:
            case StepTimeout(step=step):
                run = job.steps.get(step)
                if run is not None and run.status is StepStatus.RUNNING:
                    seconds = job.workflow.policy(job.flow_of(run.name), run.name).timeout_s or 0
                    message = f"no reply within {seconds:g}s (attempt {run.attempt})"
                    work.attempt_failed(job, run, message, "timeout")
            case RetryDue(step=step):
                run = job.steps.get(step)
                if run is not None and run.status is StepStatus.RETRYING:
                    work.dispatch(job, run)


class JobDeadlines(Part):
    """A workflow's `timeout`: the most a top-level job may run."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a `timeout`."""
        return workflow.timeout is not None

    timers = (JobTimeout,)

    def job_running(self, work: Work, job: Job) -> None:
        """The job runs from now: arm its deadline."""
        if job.workflow.timeout is not None:
            work.start_timer(JobTimeout(job.id), work.at + job.workflow.timeout)

    def job_stopped(self, work: Work, job: Job) -> None:
        """The job completed, failed or was cancelled: its deadline goes."""
        if job.workflow.timeout is not None:
            work.cancel_timer(JobTimeout(job.id))

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """The deadline came: the job fails."""
        if job is not None:
            seconds = job.workflow.timeout
            work.fail_job(job, {"step": None, "message": f"job timed out after {seconds:g}s"})
