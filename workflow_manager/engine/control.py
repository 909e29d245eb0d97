"""Job control: cancelling a running job, and retrying a failed one from where it failed.

A part of the engine's `Transition` (see `workflow_manager.engine.work`), like
`workflow_manager.engine.failures`.
"""

from __future__ import annotations

from workflow_manager.engine import timers
from workflow_manager.engine.commands import Refused
from workflow_manager.engine.compensation import retry_refusal
from workflow_manager.engine.snapshot import forget
from workflow_manager.engine.state import Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.work import Work

__all__ = ["JobControl"]


class JobControl:
    """Cancel and retry requests."""

    def _control_target(self: Work, job_id: str, action: str) -> Job | None:
        """The top-level job a request names, or None after refusing it with the reason."""
        job = self.find_job(job_id)
        self.concerns(job)
        if job is None:
            root = self.root_of_gone(job_id)
            if root is not None:
                reason = f"job {job_id} is a child of job {root}; {action} that job"
                self.commands.append(Refused(job_id, action, reason, "conflict"))
            else:
                self.commands.append(Refused(job_id, action, f"no job {job_id}", "not-found"))
            return None
        if job.parent is not None:
            reason = f"job {job.id} is a child of job {job.parent.job_id}; {action} that job"
            self.commands.append(Refused(job.id, action, reason, "conflict"))
            return None
        return job

    def cancel(self: Work, job_id: str) -> None:
        """Stop a running job and its children (its on_cancel steps run), or a scheduled one."""
        job = self._control_target(job_id, "cancel")
        if job is None:
            return
        if job.status is JobStatus.QUEUED:
            self._cancel_queued(job)
            return
        if job.status is JobStatus.SCHEDULED:
            self._cancel_scheduled(job)
            return
        if not job.is_running:
            reason = (
                f"job {job.id} is already {job.status}; "
                "only a scheduled, queued or running job can be cancelled"
            )
            self.commands.append(Refused(job.id, "cancel", reason, "conflict"))
            return
        self._cancel_job(job, "cancelled on request", True)

    def retry(self: Work, job_id: str) -> None:
        """Run a failed job again: completed steps and children keep their outputs."""
        job = self._control_target(job_id, "retry")
        if job is None:
            return
        if job.status is not JobStatus.FAILED:
            reason = f"job {job.id} is {job.status}; only a failed job can be retried"
            self.commands.append(Refused(job.id, "retry", reason, "conflict"))
            return
        if job.branch_left > 0:
            reason = f"job {job.id} is still running its on_error steps; retry when they end"
            self.commands.append(Refused(job.id, "retry", reason, "conflict"))
            return
        if (reason := retry_refusal(job)) is not None:
            self.commands.append(Refused(job.id, "retry", reason, "conflict"))
            return
        if job.scopes and (reason := self._full_limit(job)) is not None:
            # Refused rather than queued: a limit means at most that many running, retries too.
            self.commands.append(Refused(job.id, "retry", reason, "conflict"))
            return
        self._revive(job)
        if job.scopes:
            self._hold_again(job)
        if job.workflow.timeout is not None:
            self._start_timer(timers.job_timeout(job.id), self.at + job.workflow.timeout)

    def _revive(self: Work, job: Job) -> None:
        """Make a failed or cancelled job run again from where it stopped."""
        for name in [n for n in job.steps if n not in job.flow.step_index]:
            if job.steps[name].recovers is not None:
                continue  # a fallback stays, so its attempt numbers go on if it runs again
            # The branch that ran is history; it runs again if need be. Its task steps'
            # children go too: unreachable from the job now, and their ids would be taken.
            for child_id in job.steps.pop(name).children or ():
                child = self.state.jobs.get(child_id)
                if child is not None:
                    forget(self.state, child)
        job.branch, job.branch_input, job.branch_left = None, None, 0
        job.status, job.error, job.finished_at, job.result = JobStatus.RUNNING, None, None, None
        if job.unique_key is not None:
            self._hold_key(job, job.unique_key)
        self.commands.append(self.started(job))
        runs = [run for run in job.steps.values() if run.recovers is None]
        for run in runs:
            if not run.status.is_done:
                self._revive_step(job, run)
        job.steps_left = sum(not r.status.is_done for r in runs)
        for run in job.steps.values():
            run.waiting_on = sum(not job.steps[d].status.is_done for d in set(run.spec.depends))
            if run.status is StepStatus.PENDING and run.waiting_on == 0:
                self.ready.append((job, run))

    def _revive_step(self: Work, job: Job, run: StepRun) -> None:
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
                child = self.state.jobs.get(child_id)
                if child is not None and child.status is not JobStatus.COMPLETED:
                    self._revive(child)
                    left += 1
            run.children_left = left
            self._start_children(job, run, job.workflow.task_by_name[run.spec.task or ""])
            return
        run.status = StepStatus.PENDING
        run.children, run.child_results, run.children_left = None, None, 0
