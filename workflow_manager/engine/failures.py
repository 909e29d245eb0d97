"""What the engine does when things go wrong: retries, timeouts, failed jobs and their branches.

A part of the engine's `Transition` (see `workflow_manager.engine.work`): it uses the transition's
state, clock (`at`), command list and step machinery, and adds the failure rules on top.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import timers
from workflow_manager.engine.commands import CancelTimer, Ignored, NotifyOutcome, StartTimer
from workflow_manager.engine.snapshot import root_of
from workflow_manager.engine.state import Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.work import Work

__all__ = ["FailureRules", "outcome_body"]


def outcome_body(
    status: str, result: dict[str, Any] | None, error: dict[str, Any] | None
) -> dict[str, Any]:
    """What a trigger's `reply_to` receives when its job ends: the result, or the error."""
    if status == JobStatus.COMPLETED:
        return result or {}
    return {"error": error}


class FailureRules:
    """Retries, timeouts, job failure, cancellation of children, on_error/on_cancel branches."""

    # -- timers ------------------------------------------------------------------------

    def _start_timer(self: Work, key: str, due_at: float) -> None:
        self.state.timers[key] = due_at
        self.commands.append(StartTimer(key, due_at))

    def _cancel_timer(self: Work, key: str) -> None:
        if self.state.timers.pop(key, None) is not None:
            self.commands.append(CancelTimer(key))

    def _clear_step_timers(self: Work, job: Job, run: StepRun) -> None:
        """Drop the step's reply deadline and any pending retry wait."""
        self._cancel_timer(timers.step_timeout(job.id, run.name, run.attempt))
        self._cancel_timer(timers.retry_due(job.id, run.name, run.attempt + 1))

    def timer_fired(self: Work, key: str) -> None:
        """A timer came due: a reply deadline, the end of a retry wait, or a job deadline."""
        parsed = timers.parse(key)
        job = self.state.jobs.get(parsed.job_id) if parsed else None
        self.concerns(job, parsed.job_id if parsed else None)
        if parsed is not None and parsed.is_held_work:
            self._held_work_due(key, parsed, job)
            return
        if self.state.timers.pop(key, None) is None:
            self.commands.append(Ignored(key, "timer was cancelled or already handled"))
            return
        if parsed is None or job is None:
            self.commands.append(Ignored(key, "timer names no job in memory"))
            return
        if parsed.is_job_start:
            self._start_scheduled(job)
            return
        if parsed.is_compensation:
            self.compensation_timer(job, parsed)
            return
        if parsed.is_job_timeout:
            seconds = job.workflow.timeout
            self._fail_job(job, {"step": None, "message": f"job timed out after {seconds:g}s"})
            return
        run = job.steps.get(parsed.step or "")
        if run is None:
            return
        if parsed.is_step_timeout and run.status is StepStatus.WAITING:
            self._wait_timed_out(job, run)
        elif parsed.is_step_timeout and run.status is StepStatus.RUNNING:
            seconds = job.workflow.policy(job.flow_of(run.name), run.name).timeout_s or 0
            message = f"no reply within {seconds:g}s (attempt {run.attempt})"
            self._attempt_failed(job, run, message, "timeout")
        elif parsed.is_retry and run.status is StepStatus.RETRYING:
            self._dispatch(job, run)

    def _held_work_due(self: Work, key: str, parsed: timers.TimerKey, job: Job | None) -> None:
        """A queued job's start or a held step's release: obeyed even when this state has no
        such timer (a replay of only the running jobs may not have reserved that slot)."""
        self.state.timers.pop(key, None)
        run = job.steps.get(parsed.step or "") if job is not None else None
        if job is not None and parsed.step is None and job.status is JobStatus.QUEUED:
            self._job_start_due(job)
        elif (
            job is not None and run is not None and run.status is StepStatus.QUEUED
            and parsed.attempt == run.attempt + 1 and job.is_live(run.name)
        ):  # fmt: skip
            self._release_due(job, run)
        else:
            self.commands.append(Ignored(key, "the job or step no longer waits for a slot"))

    # -- failed attempts and steps -----------------------------------------------------

    def _attempt_failed(
        self: Work, job: Job, run: StepRun, message: str, reason: str = "error"
    ) -> None:
        """One attempt failed: wait and try again if the step's policy allows, else fail it."""
        if run.spec.concurrency is not None:
            self._gate_release(job, run)
        self._cancel_timer(timers.step_timeout(job.id, run.name, run.attempt))
        policy = job.workflow.policy(job.flow_of(run.name), run.name)
        retry = run.attempt - run.round_start  # this round's retry number, if it gets one
        if run.spec.task is not None or retry > policy.retries:
            self._fail_step(job, run, message, reason)
            return
        run.status = StepStatus.RETRYING
        run.error = message
        self.step_finished(job, run, "retrying", reason, message)
        wait_s = timers.retry_wait_s(policy.retry_backoff, job.id, run.name, retry)
        if wait_s <= 0:
            self._dispatch(job, run)
        else:
            self._start_timer(timers.retry_due(job.id, run.name, run.attempt + 1), self.at + wait_s)

    def _fail_step(self: Work, job: Job, run: StepRun, message: str, reason: str = "error") -> None:
        if run.recovers is not None:
            self._fallback_done(job, run, None, (message, reason))
            return
        if run.spec.fallback is not None and job.is_running:
            self._fall_back(job, run, message, reason)
            return
        run.status = StepStatus.FAILED
        run.error = message
        run.finished_at = self.at
        self.step_finished(job, run, "failed", reason, message)
        if job.is_running:
            self._fail_job(job, {"step": run.name, "message": message})
        elif job.branch_left > 0:
            # A failing on_error/on_cancel step ends its branch: the job has already ended.
            self._end_branch(job)

    # -- failed and cancelled jobs -----------------------------------------------------

    def _fail_job(self: Work, job: Job, error: dict[str, Any]) -> None:
        job.status = JobStatus.FAILED
        job.error = error
        job.finished_at = self.at
        self._stop_work(job)
        run = job.steps.get(error.get("step") or "")
        attempts = run.attempt if run is not None else 0
        if job.parent is None:
            told = {**error, "attempts": attempts}
            self._wind_down(job, "on_error", {"error": told, **job.payload}, told)
        else:
            self._settle(job)

    def _cancel_job(self: Work, job: Job, message: str, with_branch: bool) -> None:
        job.status = JobStatus.CANCELLED
        job.error = {"step": None, "message": message}
        job.finished_at = self.at
        self._stop_work(job)
        if with_branch:
            self._wind_down(job, "on_cancel", {"cancelled": True, **job.payload}, job.error)
        else:
            self._settle(job)

    def _stop_work(self: Work, job: Job) -> None:
        """No more dispatches for a job that ended early: drop its timers, cancel its children."""
        self._cancel_timer(timers.job_timeout(job.id))
        for run in job.steps.values():
            self._stop_step(job, run)

    def _stop_step(self: Work, job: Job, run: StepRun) -> None:
        """Drop a step's timers and cancel its running children."""
        if run.status in (StepStatus.RUNNING, StepStatus.RETRYING, StepStatus.WAITING):
            self._clear_step_timers(job, run)
        if run.spec.concurrency is not None:
            self._gate_release(job, run)
        for child_id in run.children or ():
            child = self.state.jobs.get(child_id)
            if child is not None and child.is_running:
                self._cancel_job(child, f"parent job {job.id} {job.status}", False)

    # -- on_error / on_cancel ----------------------------------------------------------

    def _start_branch(self: Work, job: Job, kind: str, data: dict[str, Any]) -> None:
        flow = job.workflow.branches.get(kind)
        if flow is None:
            self._settle(job)
            return
        job.branch = kind
        job.branch_input = data
        job.branch_left = len(flow.steps)
        for spec in flow.steps:
            run = StepRun(spec=spec, waiting_on=len(set(spec.depends)))
            job.steps[spec.name] = run
            if run.waiting_on == 0:
                self.ready.append((job, run))

    def _end_branch(self: Work, job: Job) -> None:
        job.branch_left = 0
        for run in job.steps.values():
            self._stop_step(job, run)  # a branch task step's children too
        self._settle(job)

    def _settle(self: Work, job: Job) -> None:
        """The job is over, branch included: report it, notify its senders, tell its parent."""
        if job.unique_key is not None:
            self._release_key(job)
        if job.scopes:
            self._release_job(job)
        self.commands.append(self.finished(job))
        if job.reply_to:
            root_id = root_of(self.state, job)
            body = outcome_body(job.status, job.result, job.error)
            for reply_to in job.reply_to:
                self.commands.append(NotifyOutcome(reply_to, job.id, root_id, job.status, body))
        if job.parent is not None and job.status is not JobStatus.CANCELLED:
            self._child_finished(job)
