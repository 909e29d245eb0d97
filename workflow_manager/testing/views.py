"""What a simulated run shows: each job and each step's attempts, built from the engine's
commands (as the manager's observers are); a task step's join and reduce progress is read from
the engine's run of it, as the manager's API shows it (`workflow_manager.fanin`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workflow_manager.engine import (
    Command,
    Dispatch,
    EngineState,
    JobFinished,
    JobQueued,
    JobScheduled,
    JobStarted,
    StepFinished,
    StepRun,
    StepThrottled,
    StepWaiting,
)
from workflow_manager.fanin import join_view, reduce_view

__all__ = ["Attempt", "StepView", "JobView", "Views"]


@dataclass(slots=True)
class Attempt:
    """One attempt of a step: its request's input, when it went, and how it ended."""

    number: int
    input: dict[str, Any] | None
    sent_at: float | None
    outcome: str | None = None  # completed, retrying, failed, skipped, recovered; None: running
    reason: str | None = None  # for a failure: error, timeout, invalid_reply
    message: str | None = None
    ended_at: float | None = None
    output: dict[str, Any] | None = None  # what the handler answered, when it answered


@dataclass(slots=True)
class StepView:
    """A step of a job: its status now and every attempt so far."""

    name: str
    status: str = "pending"
    attempts: list[Attempt] = field(default_factory=list)
    # A task step with a join (min_success, first): policy, needed, succeeded, failed, left,
    # then, met; with `reduce`: step, batch, batches, reduced (as GET /api/job shows them).
    join: dict[str, Any] | None = None
    reduce: dict[str, Any] | None = None

    @property
    def output(self) -> dict[str, Any] | None:
        """The output of its last answered attempt, if any."""
        answered = [a.output for a in self.attempts if a.output is not None]
        return answered[-1] if answered else None


@dataclass(slots=True)
class JobView:
    """A job of the run: its status, result or error, its steps, and its parent if a child."""

    id: str
    workflow: str
    status: str
    payload: dict[str, Any] | None = None
    parent: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    started_at: float | None = None
    finished_at: float | None = None
    steps: dict[str, StepView] = field(default_factory=dict)

    def step(self, name: str) -> StepView:
        """The step `name` (KeyError naming the steps there are, if it has none)."""
        try:
            return self.steps[name]
        except KeyError:
            known = ", ".join(self.steps) or "none yet"
            raise KeyError(f"job {self.id} has no step {name!r} (steps seen: {known})") from None


class Views:
    """Every job of a run as its commands tell it, in the order they were seen."""

    def __init__(self) -> None:
        self.jobs: dict[str, JobView] = {}

    def job(self, job_id: str, workflow: str = "", status: str = "submitted") -> JobView:
        """The view of `job_id`, made when first seen."""
        view = self.jobs.get(job_id)
        if view is None:
            view = self.jobs[job_id] = JobView(job_id, workflow, status)
        return view

    def observe(self, commands: list[Command]) -> None:
        """Fold one event's commands into the views."""
        for command in commands:
            if isinstance(command, JobStarted):
                job = self.job(command.job_id, command.workflow)
                job.status, job.payload, job.parent = "running", command.payload, command.parent_id
                job.started_at = command.at
            elif isinstance(command, JobScheduled | JobQueued):
                job = self.job(command.job_id, command.workflow)
                job.status = "scheduled" if isinstance(command, JobScheduled) else "queued"
            elif isinstance(command, Dispatch):
                step = self._step(command.job_id, command.step)
                step.status = "running"
                step.attempts.append(Attempt(command.attempt, dict(command.body), None))
            elif isinstance(command, StepWaiting):
                self._step(command.job_id, command.step).status = "waiting"
            elif isinstance(command, StepThrottled):
                self._step(command.job_id, command.step).status = "throttled"
            elif isinstance(command, StepFinished):
                self._finished(command)
            elif isinstance(command, JobFinished):
                job = self.job(command.job_id, command.workflow)
                job.status, job.result, job.error = (
                    str(command.status),
                    command.result,
                    command.error,
                )
                job.finished_at = command.at

    def gathered(self, state: EngineState, commands: Sequence[Command]) -> None:
        """Refresh the join and reduce progress of the task steps of the jobs these commands
        touched (a child settled, a step or a reducer's batch ended), from `state`."""
        touched = {
            command.parent_id if isinstance(command, JobFinished) else command.job_id
            for command in commands
            if isinstance(command, StepFinished)
            or (isinstance(command, JobFinished) and command.parent_id is not None)
        }
        for job_id in touched:
            job = state.jobs.get(job_id or "")
            for run in job.steps.values() if job is not None else ():
                if run.children is not None and (run.spec.join or run.spec.reduce):
                    self._gathering(job_id or "", run)

    def _gathering(self, job_id: str, run: StepRun) -> None:
        view = self._step(job_id, run.name)
        if view.status == "pending":
            view.status = "running"  # a task step sends no request: no Dispatch said so
        view.join = join_view(run)
        reduce = run.spec.reduce
        if reduce is not None:
            # Counted from the reducer's answered batches, which the views hold already.
            reducer = self.job(job_id).steps.get(reduce.step)
            attempts = reducer.attempts if reducer is not None else []
            batches = [a for a in attempts if a.outcome == "completed"]
            reduced = sum(len((a.input or {}).get("results") or ()) for a in batches)
            view.reduce = reduce_view(run, reduced=reduced, batches=len(batches))

    def sent(self, job_id: str, step: str, attempt: int, at: float) -> None:
        """Attempt `attempt` of a step was handed to its handler at `at`."""
        for run in self._step(job_id, step).attempts:
            if run.number == attempt:
                run.sent_at = at

    def answered(self, job_id: str, step: str, attempt: int, output: dict[str, Any]) -> None:
        """The handler answered attempt `attempt` with `output`."""
        for run in self._step(job_id, step).attempts:
            if run.number == attempt:
                run.output = output

    def _step(self, job_id: str, name: str) -> StepView:
        steps = self.job(job_id).steps
        view = steps.get(name)
        if view is None:
            view = steps[name] = StepView(name)
        return view

    def _finished(self, command: StepFinished) -> None:
        step = self._step(command.job_id, command.step)
        attempt = next((a for a in step.attempts if a.number == command.attempt), None)
        if attempt is None:  # a task step, a skipped or waiting one: no request was sent
            attempt = Attempt(command.attempt, None, command.dispatched_at)
            step.attempts.append(attempt)
        attempt.outcome, attempt.reason = command.outcome, command.reason
        attempt.message, attempt.ended_at = command.message, command.at
        step.status = command.outcome
