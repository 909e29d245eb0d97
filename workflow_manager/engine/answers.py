"""A worker's answer to a step's request: it completes the step, or fails that attempt.

Functions of the event's work (`workflow_manager.engine.extension.Work`); parts take part at
`claims_reply` (a compensation's reply) and `reply_problem` (the output contract, a
metadata patch).
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine.events import StepReplied
from workflow_manager.engine.extension import Work
from workflow_manager.engine.redelivery import is_repeat, reply_digest
from workflow_manager.engine.replies import ReplyError, decode_output
from workflow_manager.engine.state import Job, StepRun, StepStatus

__all__ = ["reply"]

# Steps a reply may still complete: a good reply for an earlier attempt wins, even while the
# next attempt waits for its backoff (retrying), for a slot under the step's limit (queued) or
# for its turn under the step's rate (throttled).
_ANSWERABLE = (StepStatus.RUNNING, StepStatus.RETRYING, StepStatus.QUEUED, StepStatus.THROTTLED)


def reply(work: Work, event: StepReplied) -> None:
    """A worker's answer: complete the step, or fail this attempt of it."""
    for part in work.parts.claims_reply:
        if part.claims_reply(work, event):
            return
    target = _reply_target(work, event)
    if target is None:
        return
    job, run = target
    error = event.error
    output: dict[str, Any] = {}
    reason = "error"
    if error is None:
        try:
            output = decode_output(event.body)
        except ReplyError as exc:
            error, reason = str(exc), "invalid_reply"
    if error is None:
        for part in work.parts.of(job.workflow).reply_problem:
            if (error := part.reply_problem(work, job, run, event, output)) is not None:
                reason = "invalid_reply"
                break
    if error is None:
        # The first good reply wins, even one for an earlier attempt than the latest.
        work.clear_step_timers(job, run)
        work.complete_step(job, run, output)
    elif event.attempt is not None and event.attempt < run.attempt:
        work.ignore(event.correlation_id, f"failed reply for superseded attempt {event.attempt}")
    elif run.status in (StepStatus.RETRYING, StepStatus.QUEUED, StepStatus.THROTTLED):
        work.ignore(event.correlation_id, "failed reply for an attempt that already failed")
    else:
        run.counted_reply = reply_digest(event)
        work.attempt_failed(job, run, error or "worker reported an error", reason)


def _reply_target(work: Work, event: StepReplied) -> tuple[Job, StepRun] | None:
    """The running step a reply answers, or None after reporting why it answers none."""
    cid, job_id, step = event.correlation_id, event.job_id, event.step
    job = work.find_job(job_id)
    work.concerns(job, job_id)
    if job is None:
        work.ignore(cid, f"no job {job_id}")
        return None
    run = job.steps.get(step)
    in_branch = (
        run is not None
        and job.branch_left > 0
        and step not in job.flow.step_index
        and run.recovers is None  # a fallback ends with its job: late replies are dropped
    )
    if not job.is_running and not in_branch:
        work.ignore(cid, f"job {job_id} is already {job.status}; late reply dropped")
        return None
    if run is None:
        work.ignore(cid, f"job {job_id} ({job.flow.name}) has no step '{step}'")
        return None
    if run.spec.task is not None:
        work.ignore(cid, f"step '{step}' is a task step; no worker answers it")
        return None
    if run.status not in _ANSWERABLE or run.attempt == 0:
        work.ignore(cid, f"step '{step}' is {run.status}; duplicate or late reply")
        return None
    if event.attempt is not None and not 1 <= event.attempt <= run.attempt:
        why = f"reply is for attempt {event.attempt}, but step '{step}' is on {run.attempt}"
        work.ignore(cid, why)
        return None
    if is_repeat(event, run.counted_reply):
        work.ignore(cid, "redelivered copy of a reply already counted")
        return None
    return job, run
