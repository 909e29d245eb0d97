"""Making a job: a top-level job for a submission, or a child of a task step; cancelling a
top-level job that has not started yet (scheduled or queued)."""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Flow, Workflow
from workflow_manager.engine.extension import Work
from workflow_manager.engine.state import Job, JobStatus, ParentLink, StepRun

__all__ = ["cancel_unstarted", "create_job", "start_job"]


def create_job(
    work: Work,
    workflow: Workflow,
    flow: Flow,
    job_id: str,
    payload: dict[str, Any],
    parent: ParentLink | None,
    trace: tuple[str, str | None],
    priority: int = 0,
    start: bool = True,
    scopes: tuple[str, ...] = (),
    partition: int | None = None,
) -> Job:
    """A new job, started unless `start` is False: `trace` is its trace id and the span its
    own span hangs from.

    A child takes its parent's priority (`priority` is a top-level job's own). `scopes`
    are the concurrency limits a top-level job counts against; `partition` where it was
    placed (a child's is its top-level job's).
    """
    steps = {s.name: StepRun(s, s.waits_for) for s in flow.steps}
    job = Job(job_id, workflow, flow, payload, work.at, steps, len(steps), parent)
    if parent is not None:
        above = work.state.jobs[parent.job_id]
        job.root_id, job.priority, job.share = above.root_id, above.priority, above.share
        job.partition = above.partition
    else:
        job.root_id, job.priority, job.partition = job_id, priority, partition
    job.trace_id, job.trace_parent = trace
    if workflow.compensates:
        job.done_order = []
    work.state.jobs[job_id] = job
    if scopes:
        job.scopes = scopes
    if start:
        start_job(work, job)
    return job


def start_job(work: Work, job: Job) -> None:
    """A job starts: reported, and its steps with nothing to wait for are ready."""
    work.report_started(job)
    work.ready.extend((job, run) for run in job.steps.values() if run.waiting_on == 0)


def cancel_unstarted(work: Work, job: Job, message: str) -> None:
    """Cancel a top-level job before it started (`message` says why): no step of it ran, so
    nothing is stopped or undone, and its on_cancel steps run as a running job's do (with the
    same input: `cancelled` and the payload); it settles once they end, or now without any."""
    job.status = JobStatus.CANCELLED
    job.error = {"step": None, "message": message}
    job.finished_at = work.at
    work.start_branch(job, "on_cancel", {"cancelled": True, **job.payload})
