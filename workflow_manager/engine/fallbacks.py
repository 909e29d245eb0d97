"""Fallbacks: a step that fails for good hands its input and error to its `fallback` step.

A part (`workflow_manager.engine.extension.Part`). The fallback runs as a
step of the same job (`<job>:<fallback name>`, its own retries and timeout) with the failed step's
input plus `"error": {"step", "message", "attempts"}`. Its output becomes the step's, whose status
is then `recovered`, and the job goes on; if it fails too, the step fails the job with both errors.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Workflow
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.state import Job, StepRun, StepStatus

__all__ = ["Fallbacks"]


class Fallbacks(Part):
    """Starting a failed step's fallback, and what its success or failure does to the step."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a step that has a `fallback`."""
        return any(step.fallback is not None for step in every_step(workflow))

    def failure_held(self, work: Work, job: Job, run: StepRun, message: str, reason: str) -> bool:
        """A failed fallback settles its step; a failed step with a fallback starts it."""
        if run.recovers is not None:
            self._fallback_done(work, job, run, None, (message, reason))
            return True
        if run.spec.fallback is not None and job.is_running:
            self._fall_back(work, job, run, message, reason)
            return True
        return False

    def completion_held(self, work: Work, job: Job, run: StepRun, output: dict[str, Any]) -> bool:
        """A fallback's output goes to the step it answers."""
        if run.recovers is None:
            return False
        self._fallback_done(work, job, run, output)
        return True

    def _fall_back(self, work: Work, job: Job, run: StepRun, message: str, reason: str) -> None:
        """The step failed for good: stop it, and send its fallback a request."""
        spec = run.spec.fallback_step
        assert spec is not None  # called only for a step with a fallback
        work.clear_step_timers(job, run)
        stopped = f"task step '{run.name}' of job {job.id} failed; its fallback runs"
        for child_id in run.children or ():  # a task step's children still running
            child = work.state.jobs.get(child_id)
            if child is not None and child.is_running:
                work.cancel_job(child, stopped, False)
        run.status = StepStatus.FAILED
        run.error = message
        run.finished_at = work.at
        work.step_finished(job, run, "failed", reason, message)
        fallback = StepRun(spec=spec, waiting_on=0, recovers=run.name)
        previous = job.steps.get(spec.name)
        if previous is not None:
            fallback.attempt = fallback.round_start = previous.attempt  # a retried job's
        job.steps[spec.name] = fallback
        error = {"step": run.name, "message": message, "attempts": run.attempt}
        fallback.input = {**(run.input or {}), "error": error}
        fallback.started_at = work.at
        work.dispatch(job, fallback)

    def _fallback_done(
        self,
        work: Work,
        job: Job,
        fallback: StepRun,
        output: dict[str, Any] | None,
        failure: tuple[str, str] = ("", ""),
    ) -> None:
        """The fallback ended with `output`, or failed (None, and `failure`'s message and
        reason): settle the step it answers."""
        step = job.steps[fallback.recovers or ""]
        fallback.finished_at = work.at
        if output is not None:
            fallback.status = StepStatus.COMPLETED
            fallback.output = output
            fallback.error = None
            work.step_finished(job, fallback, "completed", None, None)
            work.complete_step(job, step, output, StepStatus.RECOVERED)
            return
        message, reason = failure
        fallback.status = StepStatus.FAILED
        fallback.error = message
        work.step_finished(job, fallback, "failed", reason, message)
        both = f"{step.error}; its fallback '{fallback.name}' failed too: {message}"
        work.fail_job(job, {"step": step.name, "message": both})
