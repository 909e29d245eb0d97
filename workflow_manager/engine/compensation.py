"""Compensation: a failed or cancelled job undoes its completed steps, newest first (LIFO).

A part (`workflow_manager.engine.extension.Part`). Only workflows with a `compensate` step pay
for it: their jobs note the order their main steps complete in (`Job.done_order`) and each
finished child's compensations (`StepRun.child_plans`), since a completed child leaves memory.
When the top-level job fails or is cancelled, its plan runs one compensation at a time, each
with its own retries; one that still fails is recorded and the next goes on. Then on_error /
on_cancel run as they would have.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Workflow
from workflow_manager.engine import timers
from workflow_manager.engine.commands import (
    Dispatch,
    Ignored,
    JobCompensating,
    StepCompensation,
    StepFinished,
)
from workflow_manager.engine.events import StepReplied
from workflow_manager.engine.extension import Part, Work
from workflow_manager.engine.ids import canonical_uuid
from workflow_manager.engine.metadata import job_meta
from workflow_manager.engine.redelivery import is_repeat, reply_digest
from workflow_manager.engine.replies import ReplyError, decode_output
from workflow_manager.engine.state import (
    Compensation,
    CompensationRun,
    EngineState,
    Job,
    JobStatus,
    StepRun,
    StepStatus,
)
from workflow_manager.engine.timers import CompensationRetry, CompensationTimeout, Timer

__all__ = ["Compensations", "plan_of", "retry_refusal"]

# A step recovered by its fallback stands like a completed one: its output went on.
_UNDOABLE = (StepStatus.COMPLETED, StepStatus.RECOVERED)


def plan_of(state: EngineState, job: Job) -> list[CompensationRun]:
    """The compensations that undo `job` (and its children), in the order they are to run.

    Children of task steps still running when the job stopped come first; then the main steps
    from the last completed back, a task step's finished children (newest first) before it.
    """
    plan: list[CompensationRun] = []
    done = job.done_order or []
    completed = set(done)
    for run in reversed(job.steps.values()):
        if run.children is not None and run.name not in completed:
            plan += _children_plan(state, run)
    for name in reversed(done):
        run = job.steps[name]
        if run.children is not None:
            plan += _children_plan(state, run)
        handler = run.spec.compensate
        if handler is not None and run.status in _UNDOABLE:
            task = None if job.flow is job.workflow else job.flow.name
            policy = job.workflow.policy(job.flow, handler.name)
            plan.append(
                CompensationRun(
                    job.id,
                    task,
                    run.name,
                    handler,
                    policy,
                    run.input or {},
                    run.output or {},
                    was=run.status,
                )  # fmt: skip
            )
    return plan


def _children_plan(state: EngineState, run: StepRun) -> list[CompensationRun]:
    """A task step's children: those stopped with their parent, then the finished, newest first."""
    plan: list[CompensationRun] = []
    for child_id in reversed(run.children or ()):
        child = state.jobs.get(child_id)
        if child is not None and child.status is JobStatus.CANCELLED:
            plan += plan_of(state, child)
    for child_plan in reversed(run.child_plans or ()):
        plan += child_plan
    return plan


def retry_refusal(job: Job) -> str | None:
    """Why a failed job may not be retried, if it has started undoing its steps."""
    if job.compensation is None:
        return None
    return (
        f"job {job.id} has started compensating its completed steps "
        f"({len(job.compensation.runs)} compensations); a retry would build on undone work: "
        "submit a new job instead"
    )


class Compensations(Part):
    """Planning, dispatching and retrying compensations, and routing their replies."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a step that has `compensate` (replies are claimed for all)."""
        return workflow.compensates

    timers = (CompensationTimeout, CompensationRetry)

    def step_completed(self, work: Work, job: Job, run: StepRun) -> None:
        """Note the order main steps complete in (they are undone newest first)."""
        if job.done_order is not None:
            job.done_order.append(run.name)

    def child_settled(self, work: Work, parent: Job, run: StepRun, child: Job) -> None:
        """A child finished: keep what undoing it takes, for when it has left memory."""
        if child.done_order is None:
            return
        if run.child_plans is None:
            run.child_plans = []
        run.child_plans.append(plan_of(work.state, child))

    def retry_refusal(self, work: Work, job: Job) -> str | None:
        """Why a failed job may not be retried, if it has started undoing its steps."""
        return retry_refusal(job)

    def wind_down_held(
        self, work: Work, job: Job, kind: str, data: dict[str, Any], error: dict[str, Any]
    ) -> bool:
        """A top-level job failed or was cancelled: compensate, then run its `kind` branch."""
        plan = plan_of(work.state, job) if job.done_order is not None else []
        if not plan:
            return False
        reason = "failed" if job.status is JobStatus.FAILED else "cancelled"
        job.compensation = Compensation(plan, reason, error, kind, data)
        work.commands.append(
            JobCompensating(
                job.id, job.root_id, job.workflow.name, reason, len(plan), work.at, job.trace_id
            )
        )
        self._next_compensation(work, job)
        return True

    def _next_compensation(self, work: Work, job: Job) -> None:
        """Dispatch the current compensation, or, with none left, start the job's branch."""
        compensation = job.compensation
        assert compensation is not None  # only called while compensating
        if compensation.is_done:
            work.start_branch(job, compensation.then, compensation.then_input)
            return
        comp = compensation.runs[compensation.current]
        comp.started_at = work.at
        self._mark_step(work, job, comp, StepStatus.COMPENSATING, "compensating", None)
        work.state.compensating[comp.correlation_id] = job.id
        self._dispatch_compensation(work, job, comp)

    def _dispatch_compensation(self, work: Work, job: Job, comp: CompensationRun) -> None:
        compensation = job.compensation
        assert compensation is not None
        comp.status = StepStatus.RUNNING
        comp.attempt += 1
        comp.dispatched_at = work.at
        body = {
            "input": comp.input,
            "output": comp.output,
            "reason": compensation.reason,
            "error": compensation.error,
        }
        work.commands.append(
            Dispatch(
                job_id=comp.job_id,
                root_id=job.root_id,
                step=comp.name,
                queue=comp.spec.queue_name,
                correlation_id=comp.correlation_id,
                body=body,
                workflow=job.workflow.name,
                attempt=comp.attempt,
                trace_id=job.trace_id,
                meta=job_meta(work.state, job),
                partition=job.partition,
            )
        )
        if comp.policy.timeout_s is not None:
            key = CompensationTimeout(job.id, compensation.current, comp.attempt)
            work.start_timer(key, work.at + comp.policy.timeout_s)

    def _mark_step(
        self,
        work: Work,
        job: Job,
        comp: CompensationRun,
        status: StepStatus,
        outcome: str,
        message: str | None,
    ) -> None:
        """Show the step being undone as `status` (when its job is in memory) and report it."""
        owner = job if comp.job_id == job.id else work.state.jobs.get(comp.job_id)
        run = owner.steps.get(comp.step) if owner is not None else None
        if run is not None:
            run.status = status
        work.commands.append(
            StepCompensation(
                comp.job_id,
                job.root_id,
                job.workflow.name,
                comp.step,
                comp.name,
                outcome,
                message,
                work.at,
                job.trace_id,
            )  # fmt: skip
        )

    # -- replies and timers ------------------------------------------------------------

    def claims_reply(self, work: Work, event: StepReplied) -> bool:
        """Handle a reply to a compensation in flight; False when it answers none."""
        if not work.state.compensating:
            return False
        job_id = canonical_uuid(event.job_id) or event.job_id
        owner = work.state.compensating.get(f"{job_id}:{event.step}")
        if owner is None:
            return False
        job = work.state.jobs[owner]
        compensation = job.compensation
        assert compensation is not None  # registered only while compensating
        work.concerns(job)
        comp = compensation.runs[compensation.current]
        cid = event.correlation_id
        if event.attempt is not None and not 1 <= event.attempt <= comp.attempt:
            work.commands.append(
                Ignored(cid, f"reply is for attempt {event.attempt}, but it is on {comp.attempt}")
            )
            return True
        if is_repeat(event, comp.counted_reply):
            work.commands.append(Ignored(cid, "redelivered copy of a reply already counted"))
            return True
        error, reason = event.error, "error"
        if error is None:
            try:
                decode_output(event.body)
            except ReplyError as exc:
                error, reason = str(exc), "invalid_reply"
        if error is None:
            self._end_compensation(work, job, comp, None)
        elif event.attempt is not None and event.attempt < comp.attempt:
            work.commands.append(
                Ignored(cid, f"failed reply for superseded attempt {event.attempt}")
            )
        elif comp.status is StepStatus.RETRYING:
            work.commands.append(Ignored(cid, "failed reply for an attempt that already failed"))
        else:
            comp.counted_reply = reply_digest(event)
            self._compensation_failed(work, job, comp, error or "worker reported an error", reason)
        return True

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A compensation's reply deadline or retry wait came due."""
        compensation = job.compensation if job is not None else None
        if job is None or compensation is None:
            return
        comp = compensation.runs[compensation.current] if not compensation.is_done else None
        match timer:
            case CompensationTimeout(index=index) if index == compensation.current:
                if comp is not None and comp.status is StepStatus.RUNNING:
                    seconds = comp.policy.timeout_s or 0
                    message = f"no reply within {seconds:g}s (attempt {comp.attempt})"
                    self._compensation_failed(work, job, comp, message, "timeout")
            case CompensationRetry(index=index) if index == compensation.current:
                if comp is not None and comp.status is StepStatus.RETRYING:
                    self._dispatch_compensation(work, job, comp)

    def _compensation_failed(
        self, work: Work, job: Job, comp: CompensationRun, message: str, reason: str
    ) -> None:
        """An attempt failed: retry by the compensation's policy, else record it and go on."""
        compensation = job.compensation
        assert compensation is not None
        index = compensation.current
        work.cancel_timer(CompensationTimeout(job.id, index, comp.attempt))
        comp.error = message
        if comp.attempt > comp.policy.retries:
            self._end_compensation(work, job, comp, (reason, message))
            return
        comp.status = StepStatus.RETRYING
        self._compensation_finished(work, job, comp, "retrying", reason, message)
        wait_s = timers.retry_wait_s(
            comp.policy.retry_backoff, comp.job_id, comp.name, comp.attempt
        )
        if wait_s <= 0:
            self._dispatch_compensation(work, job, comp)
        else:
            key = CompensationRetry(job.id, index, comp.attempt + 1)
            work.start_timer(key, work.at + wait_s)

    def _end_compensation(
        self, work: Work, job: Job, comp: CompensationRun, failure: tuple[str, str] | None
    ) -> None:
        """The current compensation is over (failed for good when `failure` says why): next."""
        compensation = job.compensation
        assert compensation is not None
        index = compensation.current
        work.cancel_timer(CompensationTimeout(job.id, index, comp.attempt))
        work.cancel_timer(CompensationRetry(job.id, index, comp.attempt + 1))
        del work.state.compensating[comp.correlation_id]
        comp.finished_at = work.at
        if failure is None:
            comp.status, comp.error = StepStatus.COMPLETED, None
            self._compensation_finished(work, job, comp, "completed", None, None)
            self._mark_step(work, job, comp, StepStatus.COMPENSATED, "compensated", None)
        else:
            reason, message = failure
            comp.status = StepStatus.FAILED
            self._compensation_finished(work, job, comp, "failed", reason, message)
            self._mark_step(work, job, comp, comp.was, "failed", message)
        compensation.current += 1
        self._next_compensation(work, job)

    def _compensation_finished(
        self,
        work: Work,
        job: Job,
        comp: CompensationRun,
        outcome: str,
        reason: str | None,
        message: str | None,
    ) -> None:
        """Report how a compensation attempt ended, like a step's (events and metrics)."""
        work.commands.append(
            StepFinished(
                comp.job_id,
                job.root_id,
                job.workflow.name,
                comp.name,
                comp.attempt,
                outcome,
                reason,
                message,
                comp.dispatched_at,
                work.at,
                job.trace_id,
            )  # fmt: skip
        )
