"""Job control: cancelling a running job, and retrying a failed one from where it failed.

Functions of the event's work (`workflow_manager.engine.extension.Work`) that answer
`CancelRequested` and `RetryRequested`; parts take part at `cancel_held` (a job that has not
started: delays, admission), `retry_refusal` (compensation, admission) and `job_revived`
(unique keys, limits).
"""

from __future__ import annotations

from workflow_manager.engine.commands import Refused
from workflow_manager.engine.extension import Work
from workflow_manager.engine.snapshot import forget
from workflow_manager.engine.state import Job, JobStatus, StepRun, StepStatus

__all__ = ["cancel", "retry", "control_target"]


def control_target(work: Work, job_id: str, action: str) -> Job | None:
    """The top-level job a request (`action`) names, or None after refusing it with why."""
    job = work.find_job(job_id)
    work.concerns(job)
    if job is None:
        root = work.root_of_gone(job_id)
        if root is not None:
            reason = f"job {job_id} is a child of job {root}; {action} that job"
            work.commands.append(Refused(job_id, action, reason, "conflict"))
        else:
            work.commands.append(Refused(job_id, action, f"no job {job_id}", "not-found"))
        return None
    if job.parent is not None:
        reason = f"job {job.id} is a child of job {job.parent.job_id}; {action} that job"
        work.commands.append(Refused(job.id, action, reason, "conflict"))
        return None
    return job


def cancel(work: Work, job_id: str) -> None:
    """Stop a running job and its children, or one not started yet (scheduled, queued):
    either way its on_cancel steps run."""
    job = control_target(work, job_id, "cancel")
    if job is None:
        return
    for part in work.parts.of(job.workflow).cancel_held:
        if part.cancel_held(work, job):
            return
    if not job.is_running:
        reason = (
            f"job {job.id} is already {job.status}; "
            "only a scheduled, queued or running job can be cancelled"
        )
        work.commands.append(Refused(job.id, "cancel", reason, "conflict"))
        return
    work.cancel_job(job, "cancelled on request", True)


def retry(work: Work, job_id: str) -> None:
    """Run a failed job again: completed steps and children keep their outputs."""
    job = control_target(work, job_id, "retry")
    if job is None:
        return
    reason = _retry_refusal(work, job)
    if reason is not None:
        work.commands.append(Refused(job.id, "retry", reason, "conflict"))
        return
    _revive(work, job)
    work.job_running(job)


def _retry_refusal(work: Work, job: Job) -> str | None:
    if job.status is not JobStatus.FAILED:
        return f"job {job.id} is {job.status}; only a failed job can be retried"
    if job.branch_left > 0:
        return f"job {job.id} is still running its on_error steps; retry when they end"
    for part in work.parts.of(job.workflow).retry_refusal:
        if (reason := part.retry_refusal(work, job)) is not None:
            return reason
    return None


def _revive(work: Work, job: Job) -> None:
    """Make a failed or cancelled job run again from where it stopped."""
    for name in [n for n in job.steps if n not in job.flow.step_index]:
        if job.steps[name].recovers is not None:
            continue  # a fallback stays, so its attempt numbers go on if it runs again
        # The branch that ran is history; it runs again if need be. Its task steps'
        # children go too: unreachable from the job now, and their ids would be taken.
        for child_id in job.steps.pop(name).children or ():
            child = work.state.jobs.get(child_id)
            if child is not None:
                forget(work.state, child)
    job.branch, job.branch_input, job.branch_left = None, None, 0
    job.status, job.error, job.finished_at, job.result = JobStatus.RUNNING, None, None, None
    for part in work.parts.of(job.workflow).job_revived:
        part.job_revived(work, job)
    work.report_started(job)
    runs = [run for run in job.steps.values() if run.recovers is None]
    for run in runs:
        if not run.status.is_done:
            _revive_step(work, job, run)
    job.steps_left = sum(not r.status.is_done for r in runs)
    for run in job.steps.values():
        run.waiting_on = sum(not job.steps[d].status.is_done for d in set(run.spec.depends))
        if run.status is StepStatus.PENDING and run.waiting_on == 0:
            work.ready.append((job, run))


def _revive_step(work: Work, job: Job, run: StepRun) -> None:
    run.error = None
    run.finished_at = None
    run.round_start = run.attempt
    if run.children and run.child_results is not None:
        # A fanned-out task step: run its unfinished children again, keep the completed
        # ones (a started child no longer in memory completed: its result is kept), then
        # start the ones not started yet as there is room.
        run.status = StepStatus.RUNNING
        run.failed_items = None
        left = len(run.children) - run.next_child
        for child_id in run.children[: run.next_child]:
            child = work.state.jobs.get(child_id)
            if child is not None and child.status is not JobStatus.COMPLETED:
                _revive(work, child)
                left += 1
        run.children_left = left
        work.start_children(job, run, job.workflow.task_by_name[run.spec.task or ""])
        return
    run.status = StepStatus.PENDING
    run.children, run.child_results, run.children_left = None, None, 0
