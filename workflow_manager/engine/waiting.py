"""Waiting steps (`wait: true`): no request; the step waits for a signal, whose JSON object
becomes its output. A signal that comes before the step is reached is kept in its job and
completes the step when it is reached. The step's own `timeout` fails it like a step timeout.

A part (`workflow_manager.engine.extension.Part`); `signal` answers a signal. Signals are
engine events (`SignalReceived`), journaled and replayed, so a kept signal and a waiting step
survive a crash.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import Refused, StepSignalled, StepWaiting
from workflow_manager.engine.events import SignalReceived
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.state import Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.timers import StepTimeout, Timer

__all__ = ["WaitingSteps", "signal"]

_SIGNAL = "signal"


class WaitingSteps(Part):
    """Reaching a waiting step (a kept signal completes it at once), and its timeout."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a waiting step."""
        return any(step.wait for step in every_step(workflow))

    timers = (StepTimeout,)

    def step_starting_held(self, work: Work, job: Job, run: StepRun, data: dict[str, Any]) -> bool:
        """A waiting step is reached: a kept signal completes it, else it waits for one."""
        if not run.spec.wait:
            return False
        run.attempt += 1
        run.dispatched_at = work.at
        kept = job.signals.pop(run.name, None) if job.signals else None
        if kept is not None:
            _signalled(work, job, run, kept)
            return True
        run.status = StepStatus.WAITING
        timeout_at = None if run.spec.timeout is None else work.at + run.spec.timeout
        if timeout_at is not None:
            work.start_timer(StepTimeout(job.id, run.name, run.attempt), timeout_at)
        work.commands.append(
            StepWaiting(job.id, job.root_id, job.workflow.name, run.name, work.at, timeout_at)
        )
        return True

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """No signal within the step's timeout: the step fails (and with it the job)."""
        match timer:
            case StepTimeout(step=step) if job is not None:
                run = job.steps.get(step)
                if run is not None and run.status is StepStatus.WAITING:
                    message = f"no signal within {run.spec.timeout or 0:g}s"
                    work.fail_step(job, run, message, "timeout")


def _signalled(work: Work, job: Job, run: StepRun, payload: dict[str, Any]) -> None:
    work.commands.append(StepSignalled(job.id, job.root_id, job.workflow.name, run.name, work.at))
    work.complete_step(job, run, payload)


def signal(work: Work, event: SignalReceived) -> None:
    """A signal: complete the waiting step, keep it for later, or refuse it with why."""
    target = _signal_target(work, event)
    if target is None:
        return
    job, run = target
    if run.status is StepStatus.WAITING:
        work.cancel_timer(StepTimeout(job.id, run.name, run.attempt))
        _signalled(work, job, run, event.payload)
        return
    job.signals = job.signals or {}
    job.signals[run.name] = event.payload
    work.commands.append(
        StepSignalled(job.id, job.root_id, job.workflow.name, run.name, work.at, kept=True)
    )


def _signal_target(work: Work, event: SignalReceived) -> tuple[Job, StepRun] | None:
    """The job and waiting step a signal is for, or None after refusing it."""
    job = work.find_job(event.job_id)
    work.concerns(job, event.job_id)
    refusal = _refusal(work, event, job)
    if refusal is not None:
        reason, kind = refusal
        work.commands.append(Refused(event.job_id, _SIGNAL, reason, kind))
        return None
    assert job is not None  # _refusal says why not otherwise
    return job, job.steps[event.step]


def _refusal(work: Work, event: SignalReceived, job: Job | None) -> tuple[str, str] | None:
    """(reason, kind) when the signal is refused, else None."""
    if job is None:
        if work.root_of_gone(event.job_id) is not None:
            return f"job {event.job_id} has completed", "conflict"
        return f"no job {event.job_id}", "not-found"
    run = job.steps.get(event.step)
    if run is None:
        waiting = [r.name for r in job.steps.values() if r.spec.wait]
        known = ", ".join(waiting) or "none"
        return f"job {job.id} has no step '{event.step}' (its waiting steps: {known})", "not-found"
    if not run.spec.wait:
        return f"step '{run.name}' does not wait for a signal (it has no 'wait: true')", "conflict"
    if not isinstance(event.payload, dict):
        return "a signal's payload must be a JSON object", "invalid"
    live = job.is_live(run.name) or job.status in (JobStatus.SCHEDULED, JobStatus.QUEUED)
    if not live:
        return f"job {job.id} is already {job.status}; its step '{run.name}' takes no signal", (
            "conflict"
        )
    if run.status is StepStatus.WAITING:
        return None
    if run.status is not StepStatus.PENDING:
        return f"step '{run.name}' of job {job.id} is already {run.status}", "conflict"
    if job.signals and run.name in job.signals:
        return f"a signal for step '{run.name}' of job {job.id} is already kept", "conflict"
    return None
