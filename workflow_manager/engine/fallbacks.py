"""Fallbacks: a step that fails for good hands its input and error to its `fallback` step.

A part of the engine's `Transition` (see `workflow_manager.engine.work`). The fallback runs as a
step of the same job (`<job>:<fallback name>`, its own retries and timeout) with the failed step's
input plus `"error": {"step", "message", "attempts"}`. Its output becomes the step's, whose status
is then `recovered`, and the job goes on; if it fails too, the step fails the job with both errors.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine.state import Job, StepRun, StepStatus
from workflow_manager.engine.work import Work

__all__ = ["FallbackRules"]


class FallbackRules:
    """Starting a failed step's fallback, and what its success or failure does to the step."""

    def _fall_back(self: Work, job: Job, run: StepRun, message: str, reason: str) -> None:
        """The step failed for good: stop it, and send its fallback a request."""
        spec = run.spec.fallback_step
        assert spec is not None  # called only for a step with a fallback
        self._clear_step_timers(job, run)
        stopped = f"task step '{run.name}' of job {job.id} failed; its fallback runs"
        for child_id in run.children or ():  # a task step's children still running
            child = self.state.jobs.get(child_id)
            if child is not None and child.is_running:
                self._cancel_job(child, stopped, False)
        run.status = StepStatus.FAILED
        run.error = message
        run.finished_at = self.at
        self.step_finished(job, run, "failed", reason, message)
        fallback = StepRun(spec=spec, waiting_on=0, recovers=run.name)
        previous = job.steps.get(spec.name)
        if previous is not None:
            fallback.attempt = fallback.round_start = previous.attempt  # a retried job's
        job.steps[spec.name] = fallback
        error = {"step": run.name, "message": message, "attempts": run.attempt}
        fallback.input = {**(run.input or {}), "error": error}
        fallback.started_at = self.at
        self._dispatch(job, fallback)

    def _fallback_done(
        self: Work,
        job: Job,
        fallback: StepRun,
        output: dict[str, Any] | None,
        failure: tuple[str, str] = ("", ""),
    ) -> None:
        """The fallback ended with `output`, or failed (None, and `failure`'s message and
        reason): settle the step it answers."""
        step = job.steps[fallback.recovers or ""]
        fallback.finished_at = self.at
        if output is not None:
            fallback.status = StepStatus.COMPLETED
            fallback.output = output
            fallback.error = None
            self.step_finished(job, fallback, "completed", None, None)
            self._complete_step(job, step, output, StepStatus.RECOVERED)
            return
        message, reason = failure
        fallback.status = StepStatus.FAILED
        fallback.error = message
        self.step_finished(job, fallback, "failed", reason, message)
        both = f"{step.error}; its fallback '{fallback.name}' failed too: {message}"
        self._fail_job(job, {"step": step.name, "message": both})
