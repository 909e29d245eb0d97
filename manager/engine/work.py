"""What the engine's rule modules may ask of the transition they are part of.

`Transition` (in `transition`) is one class assembled from rule modules: `failures` (retries,
timeouts, failed and cancelled jobs, on_error/on_cancel), `compensation` (undoing a failed
job's completed steps), `control` (cancel and retry requests), `conditions` (a step's `when`),
`fallbacks` (a failed step's fallback), `contracts` (JSON Schemas) and `delays` (delayed
starts). Those modules are written against this protocol rather than the class itself, so no
module imports the one that imports it.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from manager.config.models import Task
from manager.engine.commands import Command
from manager.engine.state import CompensationRun, EngineState, Job, StepRun, StepStatus
from manager.engine.timers import TimerKey

__all__ = ["Work"]


class Work(Protocol):
    """One event's work in progress: the state, the event's time, the commands so far."""

    state: EngineState
    at: float
    commands: list[Command]
    ready: deque[tuple[Job, StepRun]]

    def find_job(self, job_id: str) -> Job | None:
        """A job by id, in any letter case."""
        ...

    def root_of_gone(self, job_id: str) -> str | None:
        """The top-level job of a completed child that has left memory."""
        ...

    def concerns(self, job: Job | None, job_id: str | None = None) -> None:
        """Note the job this event is about, for the journal."""
        ...

    def step_finished(
        self, job: Job, run: StepRun, outcome: str, reason: str | None, message: str | None
    ) -> None:
        """Report how a step (attempt) ended, for events and metrics."""
        ...

    def started(self, job: Job) -> Command:
        """The JobStarted command for a job that (re)starts now."""
        ...

    def finished(self, job: Job) -> Command:
        """The JobFinished command for a job that has just settled."""
        ...

    # Step machinery (transition)
    def _dispatch(self, job: Job, run: StepRun) -> None: ...
    def _start_children(self, job: Job, run: StepRun, task: Task) -> None: ...
    def _child_finished(self, child: Job) -> None: ...
    def _complete_step(
        self, job: Job, run: StepRun, output: dict[str, Any], status: StepStatus = ...
    ) -> None: ...

    # Failure rules (failures)
    def _start_timer(self, key: str, due_at: float) -> None: ...
    def _cancel_timer(self, key: str) -> None: ...
    def _clear_step_timers(self, job: Job, run: StepRun) -> None: ...
    def _attempt_failed(
        self, job: Job, run: StepRun, message: str, reason: str = "error"
    ) -> None: ...
    def _fail_step(self, job: Job, run: StepRun, message: str, reason: str = "error") -> None: ...
    def _fail_job(self, job: Job, error: dict[str, Any]) -> None: ...
    def _cancel_job(self, job: Job, message: str, with_branch: bool) -> None: ...
    def _stop_work(self, job: Job) -> None: ...
    def _stop_step(self, job: Job, run: StepRun) -> None: ...
    def _start_branch(self, job: Job, kind: str, data: dict[str, Any]) -> None: ...
    def _end_branch(self, job: Job) -> None: ...
    def _settle(self, job: Job) -> None: ...

    # Fallbacks (fallbacks)
    def _fall_back(self, job: Job, run: StepRun, message: str, reason: str) -> None: ...
    def _fallback_done(
        self,
        job: Job,
        fallback: StepRun,
        output: dict[str, Any] | None,
        failure: tuple[str, str] = ...,
    ) -> None: ...

    # Compensation (compensation)
    def _wind_down(
        self, job: Job, kind: str, data: dict[str, Any], error: dict[str, Any]
    ) -> None: ...
    def compensation_timer(self, job: Job, parsed: TimerKey) -> None: ...
    def _next_compensation(self, job: Job) -> None: ...
    def _dispatch_compensation(self, job: Job, comp: CompensationRun) -> None: ...
    def _mark_step(
        self,
        job: Job,
        comp: CompensationRun,
        status: StepStatus,
        outcome: str,
        message: str | None,
    ) -> None: ...
    def _compensation_failed(
        self, job: Job, comp: CompensationRun, message: str, reason: str
    ) -> None: ...
    def _end_compensation(
        self, job: Job, comp: CompensationRun, failure: tuple[str, str] | None
    ) -> None: ...
    def _compensation_finished(
        self,
        job: Job,
        comp: CompensationRun,
        outcome: str,
        reason: str | None,
        message: str | None,
    ) -> None: ...

    # Job control (control)
    def _control_target(self, job_id: str, action: str) -> Job | None: ...
    def _revive(self, job: Job) -> None: ...
    def _revive_step(self, job: Job, run: StepRun) -> None: ...

    # Delayed starts (delays)
    def _schedule(self, job: Job, start_at: float) -> None: ...
    def _start_scheduled(self, job: Job) -> None: ...
    def _cancel_scheduled(self, job: Job) -> None: ...
