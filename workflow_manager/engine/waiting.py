"""Waiting steps (`wait: true`): no request; the step waits for a signal, whose JSON object
becomes its output. A signal that comes before the step is reached is kept in its job and
completes the step when it is reached. The step's own `timeout` fails it like a step timeout.

A part of the engine's `Transition` (see `workflow_manager.engine.work`). Signals are engine events
(`SignalReceived`), journaled and replayed, so a kept signal and a waiting step survive a crash.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import timers
from workflow_manager.engine.commands import Refused, StepSignalled, StepWaiting
from workflow_manager.engine.events import SignalReceived
from workflow_manager.engine.state import Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.work import Work

__all__ = ["WaitingSteps"]

_SIGNAL = "signal"


class WaitingSteps:
    """Reaching a waiting step, signals for it (early ones kept), and its timeout."""

    def _wait(self: Work, job: Job, run: StepRun) -> None:
        """A waiting step is reached: a kept signal completes it, else it waits for one."""
        run.attempt += 1
        run.dispatched_at = self.at
        kept = job.signals.pop(run.name, None) if job.signals else None
        if kept is not None:
            self._signalled(job, run, kept)
            return
        run.status = StepStatus.WAITING
        timeout_at = None if run.spec.timeout is None else self.at + run.spec.timeout
        if timeout_at is not None:
            self._start_timer(timers.step_timeout(job.id, run.name, run.attempt), timeout_at)
        self.commands.append(
            StepWaiting(job.id, job.root_id, job.workflow.name, run.name, self.at, timeout_at)
        )

    def _signalled(self: Work, job: Job, run: StepRun, payload: dict[str, Any]) -> None:
        self.commands.append(
            StepSignalled(job.id, job.root_id, job.workflow.name, run.name, self.at)
        )
        self._complete_step(job, run, payload)

    def _wait_timed_out(self: Work, job: Job, run: StepRun) -> None:
        """No signal within the step's timeout: the step fails (and with it the job)."""
        message = f"no signal within {run.spec.timeout or 0:g}s"
        self._fail_step(job, run, message, "timeout")

    def signal(self: Work, event: SignalReceived) -> None:
        """A signal: complete the waiting step, keep it for later, or refuse it with why."""
        target = self._signal_target(event)
        if target is None:
            return
        job, run = target
        if run.status is StepStatus.WAITING:
            self._cancel_timer(timers.step_timeout(job.id, run.name, run.attempt))
            self._signalled(job, run, event.payload)
            return
        job.signals = job.signals or {}
        job.signals[run.name] = event.payload
        self.commands.append(
            StepSignalled(job.id, job.root_id, job.workflow.name, run.name, self.at, kept=True)
        )

    def _signal_target(self: Work, event: SignalReceived) -> tuple[Job, StepRun] | None:
        """The job and waiting step a signal is for, or None after refusing it."""
        job = self.find_job(event.job_id)
        self.concerns(job, event.job_id)
        if job is None:
            root = self.root_of_gone(event.job_id)
            if root is not None:
                return self._refuse(event, f"job {event.job_id} has completed", "conflict")
            return self._refuse(event, f"no job {event.job_id}", "not-found")
        run = job.steps.get(event.step)
        if run is None:
            waiting = [r.name for r in job.steps.values() if r.spec.wait]
            known = ", ".join(waiting) or "none"
            reason = f"job {job.id} has no step '{event.step}' (its waiting steps: {known})"
            return self._refuse(event, reason, "not-found")
        if not run.spec.wait:
            reason = f"step '{run.name}' does not wait for a signal (it has no 'wait: true')"
            return self._refuse(event, reason, "conflict")
        if not isinstance(event.payload, dict):
            return self._refuse(event, "a signal's payload must be a JSON object", "invalid")
        live = job.is_live(run.name) or job.status in (JobStatus.SCHEDULED, JobStatus.QUEUED)
        if not live:
            reason = f"job {job.id} is already {job.status}; its step '{run.name}' takes no signal"
            return self._refuse(event, reason, "conflict")
        if run.status is StepStatus.WAITING:
            return job, run
        if run.status is not StepStatus.PENDING:
            reason = f"step '{run.name}' of job {job.id} is already {run.status}"
            return self._refuse(event, reason, "conflict")
        if job.signals and run.name in job.signals:
            reason = f"a signal for step '{run.name}' of job {job.id} is already kept"
            return self._refuse(event, reason, "conflict")
        return job, run

    def _refuse(self: Work, event: SignalReceived, reason: str, kind: str) -> None:
        self.commands.append(Refused(event.job_id, _SIGNAL, reason, kind))
        return None
