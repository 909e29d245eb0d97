"""A submission: refused, answered as a duplicate, or a new top-level job.

Functions of the event's work (`workflow_manager.engine.extension.Work`). A new job goes through
the parts in order: `submission_refused` (payload contract, schedules, unique keys),
`submission_prepared` (a later start, concurrency limits), then, once the job exists,
`job_created` (metadata, schedules, unique keys) and `start_held` (delays, the workflow's
rate, admission);
a fork (`workflow_manager.engine.forking`) keeps its source's earlier outputs before it starts;
a job none of them holds back runs now (`job_running`: its deadline).
"""

from __future__ import annotations

import difflib

from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import Ignored, JobRejected, NotifyOutcome
from workflow_manager.engine.events import JobSubmitted
from workflow_manager.engine.extension import Submission, Work
from workflow_manager.engine.failures import outcome_body
from workflow_manager.engine.forking import fork_problem, seed_job, source_problem
from workflow_manager.engine.ids import canonical_uuid
from workflow_manager.engine.jobs import create_job, start_job
from workflow_manager.engine.jsontext import json_type
from workflow_manager.engine.snapshot import root_of
from workflow_manager.engine.state import Job
from workflow_manager.engine.traceids import derived_trace_id

__all__ = ["submit"]


def submit(work: Work, event: JobSubmitted) -> None:
    """Start a job, or answer a duplicate submission."""
    job_id = canonical_uuid(event.job_id)
    workflow = work.state.workflow(event.workflow, event.definition)
    rejection = _rejection(work, event, job_id, workflow)
    if rejection is not None:
        kind, reason = rejection
        work.commands.append(
            JobRejected(event.job_id, event.workflow, reason, event.reply_to, kind)
        )
        return
    assert job_id is not None and workflow is not None  # narrowed by _rejection
    existing = work.state.jobs.get(job_id)
    if existing is not None:
        work.concerns(existing)
        _resubmitted(work, existing, event.reply_to)
        return
    root = work.state.gone.root_of(job_id)
    if root is not None:
        # A completed child, out of memory while its top-level job lives: the id is taken.
        work.concerns(None, job_id)
        work.ignore(job_id, f"job {job_id} completed already, as a child job of job {root}")
        return
    sub = Submission(event, workflow, job_id)
    parts = work.parts.of(workflow)
    for part in parts.submission_refused:
        if part.submission_refused(work, sub):
            return
    for part in parts.submission_prepared:
        part.submission_prepared(work, sub)
    job = _new_job(work, sub)
    work.concerns(job)
    for part in parts.job_created:
        part.job_created(work, job, sub)
    if event.reply_to:
        job.reply_to.append(event.reply_to)
    for part in parts.start_held:
        if part.start_held(work, job, sub):
            return
    work.job_running(job)


def _new_job(work: Work, sub: Submission) -> Job:
    """The new top-level job, started unless a part holds it back (later, queued). A fork
    keeps its source's outputs first, so only the steps it runs again are ready."""
    event = sub.event
    trace = (event.trace_id or derived_trace_id(sub.job_id), event.trace_parent)
    # Held back: a later start, concurrency limits, or the workflow's rate (its turn starts it).
    start = sub.start_at is None and not sub.scopes and sub.workflow.rate is None
    job = create_job(
        work, sub.workflow, sub.workflow, sub.job_id, event.payload, None, trace, event.priority,
        start and event.fork is None, sub.scopes, event.partition,
    )  # fmt: skip
    if event.fork is not None:
        seed_job(work, job, event.fork)
        if start:
            start_job(work, job)
    return job


def _rejection(
    work: Work, event: JobSubmitted, job_id: str | None, wf: Workflow | None
) -> tuple[str, str] | None:
    """(kind, reason) when the submission must be refused, else None."""
    if job_id is None:
        return "invalid-id", f"job id {event.job_id!r} is not a UUID"
    if event.fork is not None and (problem := source_problem(event.fork)) is not None:
        return "invalid-fork", problem
    if wf is None:
        return "unknown-workflow", _unknown_workflow(work, event)
    if not isinstance(event.payload, dict):
        found = json_type(event.payload)
        return "invalid-payload", f"payload must be a JSON object, got {found}"
    if event.fork is not None and (problem := fork_problem(wf, event.fork)) is not None:
        return "invalid-fork", problem
    return None


def _unknown_workflow(work: Work, event: JobSubmitted) -> str:
    current = work.state.current.get(event.workflow)
    if event.definition is not None and current is not None:
        # The name is known, only the pinned version is not: "did you mean 'w'" would mislead.
        return (
            f"workflow '{event.workflow}' has no version {event.definition} "
            f"(loaded versions do not include it; current: {current})"
        )
    known = sorted(work.state.current)
    hint = difflib.get_close_matches(event.workflow, known, n=1)
    suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
    names = ", ".join(known) or "none"
    return f"unknown workflow '{event.workflow}' (known: {names}){suggestion}"


def _resubmitted(work: Work, job: Job, reply_to: str | None) -> None:
    """A submission of a job that exists: ignored; its sender hears how the job ends."""
    work.commands.append(Ignored(job.id, "a job with this id already exists"))
    if not reply_to:
        return
    if not job.is_settled:
        if reply_to not in job.reply_to:
            job.reply_to.append(reply_to)
    else:
        body = outcome_body(job.status, job.result, job.error)
        root_id = root_of(work.state, job)
        work.commands.append(NotifyOutcome(reply_to, job.id, root_id, job.status, body))
