"""How steps and jobs end, for the core: failed attempts (retries), steps that fail for good,
failed and cancelled jobs, their on_error / on_cancel branches, and settling a job.

Functions of the event's work (`workflow_manager.engine.extension.Work`); the parts take part at
`failure_held` (fallbacks), `wind_down_held` (compensation), `request_ended` (step
concurrency), `job_stopped` (job deadlines) and `job_settled` (unique keys, limits).
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import timers
from workflow_manager.engine.children import child_finished
from workflow_manager.engine.commands import NotifyOutcome
from workflow_manager.engine.extension import Work
from workflow_manager.engine.snapshot import root_of
from workflow_manager.engine.state import Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.timers import RetryDue, StepTimeout

__all__ = [
    "attempt_failed",
    "cancel_job",
    "end_branch",
    "fail_job",
    "fail_step",
    "outcome_body",
    "settle",
    "start_branch",
    "stop_step",
]


def outcome_body(
    status: str, result: dict[str, Any] | None, error: dict[str, Any] | None
) -> dict[str, Any]:
    """What a trigger's `reply_to` receives when its job ends: the result, or the error."""
    if status == JobStatus.COMPLETED:
        return result or {}
    return {"error": error}


def attempt_failed(work: Work, job: Job, run: StepRun, message: str, reason: str = "error") -> None:
    """One attempt failed: wait and try again if the step's policy allows, else fail it."""
    for part in work.parts.of(job.workflow).request_ended:
        part.request_ended(work, job, run)
    work.cancel_timer(StepTimeout(job.id, run.name, run.attempt))
    policy = job.workflow.policy(job.flow_of(run.name), run.name)
    retry = run.attempt - run.round_start  # this round's retry number, if it gets one
    if run.spec.task is not None or retry > policy.retries:
        fail_step(work, job, run, message, reason)
        return
    run.status = StepStatus.RETRYING
    run.error = message
    work.step_finished(job, run, "retrying", reason, message)
    wait_s = timers.retry_wait_s(policy.retry_backoff, job.id, run.name, retry)
    if wait_s <= 0:
        work.dispatch(job, run)
    else:
        work.start_timer(RetryDue(job.id, run.name, run.attempt + 1), work.at + wait_s)


def fail_step(work: Work, job: Job, run: StepRun, message: str, reason: str = "error") -> None:
    """The step failed for good: unless a part answers it (a fallback), so does its job."""
    for part in work.parts.of(job.workflow).failure_held:
        if part.failure_held(work, job, run, message, reason):
            return
    run.status = StepStatus.FAILED
    run.error = message
    run.finished_at = work.at
    work.step_finished(job, run, "failed", reason, message)
    if job.is_running:
        fail_job(work, job, {"step": run.name, "message": message})
    elif job.branch_left > 0:
        # A failing on_error/on_cancel step ends its branch: the job has already ended.
        end_branch(work, job)


def fail_job(work: Work, job: Job, error: dict[str, Any]) -> None:
    """The job failed: stop its work; a top-level job winds down (compensation, on_error)."""
    job.status = JobStatus.FAILED
    job.error = error
    job.finished_at = work.at
    _stop_work(work, job)
    run = job.steps.get(error.get("step") or "")
    attempts = run.attempt if run is not None else 0
    if job.parent is None:
        told = {**error, "attempts": attempts}
        _wind_down(work, job, "on_error", {"error": told, **job.payload}, told)
    else:
        settle(work, job)


def cancel_job(work: Work, job: Job, message: str, with_branch: bool) -> None:
    """Cancel a running job; `with_branch`: it winds down (compensation, on_cancel)."""
    job.status = JobStatus.CANCELLED
    job.error = {"step": None, "message": message}
    job.finished_at = work.at
    _stop_work(work, job)
    if with_branch:
        _wind_down(work, job, "on_cancel", {"cancelled": True, **job.payload}, job.error)
    else:
        settle(work, job)


def _wind_down(
    work: Work, job: Job, kind: str, data: dict[str, Any], error: dict[str, Any]
) -> None:
    """A top-level job failed or was cancelled: a part may run first (compensation), and
    starts the `kind` branch itself when done; else the branch starts now."""
    for part in work.parts.of(job.workflow).wind_down_held:
        if part.wind_down_held(work, job, kind, data, error):
            return
    start_branch(work, job, kind, data)


def _stop_work(work: Work, job: Job) -> None:
    """No more dispatches for a job that ended early: drop its timers, cancel its children."""
    for part in work.parts.of(job.workflow).job_stopped:
        part.job_stopped(work, job)
    for run in job.steps.values():
        stop_step(work, job, run)


def stop_step(work: Work, job: Job, run: StepRun) -> None:
    """Drop a step's timers, end its request, and cancel its running children."""
    if run.status in (StepStatus.RUNNING, StepStatus.RETRYING, StepStatus.WAITING):
        work.clear_step_timers(job, run)
    for part in work.parts.of(job.workflow).request_ended:
        part.request_ended(work, job, run)
    for child_id in run.children or ():
        child = work.state.jobs.get(child_id)
        if child is not None and child.is_running:
            cancel_job(work, child, f"parent job {job.id} {job.status}", False)


def start_branch(work: Work, job: Job, kind: str, data: dict[str, Any]) -> None:
    """Run the job's `kind` branch (on_error, on_cancel) with `data`; settle it without one."""
    flow = job.workflow.branches.get(kind)
    if flow is None:
        settle(work, job)
        return
    job.branch = kind
    job.branch_input = data
    job.branch_left = len(flow.steps)
    for spec in flow.steps:
        run = StepRun(spec=spec, waiting_on=spec.waits_for)
        job.steps[spec.name] = run
        if run.waiting_on == 0:
            work.ready.append((job, run))


def end_branch(work: Work, job: Job) -> None:
    """The job's branch is over (done, or a step of it failed): settle the job."""
    job.branch_left = 0
    for run in job.steps.values():
        stop_step(work, job, run)  # a branch task step's children too
    settle(work, job)


def settle(work: Work, job: Job) -> None:
    """The job is over, branch included: parts release what it holds, then report it, notify
    its senders, tell its parent."""
    for part in work.parts.of(job.workflow).job_settled:
        part.job_settled(work, job)
    work.commands.append(work.finished(job))
    if job.reply_to:
        root_id = root_of(work.state, job)
        body = outcome_body(job.status, job.result, job.error)
        for reply_to in job.reply_to:
            work.commands.append(NotifyOutcome(reply_to, job.id, root_id, job.status, body))
    if job.parent is not None and job.status is not JobStatus.CANCELLED:
        child_finished(work, job)
