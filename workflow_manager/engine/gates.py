"""Step concurrency: at most `concurrency` requests of a step outstanding, all jobs and their
children together. A dispatch over the limit waits in the manager (step status `queued`); as
requests end, the best waiting one (highest priority, then oldest) gets the slot reserved and a
release timer due at once, which dispatches it when it fires.

As for queued jobs (`workflow_manager.engine.admission`), the release is journaled under the job it
dispatches and obeyed as it comes, so a replay of only the running jobs follows the live run.

A part of the engine's `Transition` (see `workflow_manager.engine.work`).
"""

from __future__ import annotations

from workflow_manager.engine import timers
from workflow_manager.engine.state import Job, Rank, Slots, StepRun, StepStatus
from workflow_manager.engine.work import Work

__all__ = ["StepGates"]


def _holder(job: Job, run: StepRun) -> str:
    return f"{job.id}:{run.name}"


def _rank(job: Job, run: StepRun) -> Rank:
    return (-job.priority, run.queued_at or 0.0, _holder(job, run))


class StepGates:
    """Hold dispatches of a step with `concurrency` until one of its slots is free."""

    def _gate(self: Work, job: Job, run: StepRun) -> Slots:
        name = f"{job.workflow.name}:{job.flow_of(run.name).name}:{run.name}"
        slots = self.state.gates.get(name)
        if slots is None:
            slots = self.state.gates[name] = Slots(run.spec.concurrency or 1)
        return slots

    def _hold(self: Work, job: Job, run: StepRun) -> None:
        """The step's next attempt waits for a slot (reserved at once if one is free)."""
        run.status = StepStatus.QUEUED
        run.queued_at = self.at
        slots = self._gate(job, run)
        slots.limit = run.spec.concurrency or 1  # a new definition's limit counts now
        if slots.free > 0:
            slots.holders.add(_holder(job, run))
            self._start_timer(timers.step_release(job.id, run.name, run.attempt + 1), self.at)
        else:
            slots.wait(_rank(job, run))

    def _release_due(self: Work, job: Job, run: StepRun) -> None:
        """A held step's release timer fired: dispatch it now (the journal says it was)."""
        slots = self._gate(job, run)
        holder = _holder(job, run)
        if holder not in slots.holders:
            slots.leave(_rank(job, run))
            slots.holders.add(holder)
            self._take_back(slots, holder)
        self._dispatch(job, run, released=True)

    def _take_back(self: Work, slots: Slots, keep: str) -> None:
        """Over the limit after a journaled release: the worst reservations wait again."""
        while slots.free < 0:
            reserved = []
            for holder in slots.holders:
                job_id, _, step = holder.partition(":")
                job = self.state.jobs[job_id]
                if holder != keep and job.steps[step].status is StepStatus.QUEUED:
                    reserved.append((_rank(job, job.steps[step]), job, job.steps[step]))
            if not reserved:
                return
            rank, job, run = max(reserved, key=lambda entry: entry[0])
            self._cancel_timer(timers.step_release(job.id, run.name, run.attempt + 1))
            slots.holders.discard(_holder(job, run))
            slots.wait(rank)

    def _gate_release(self: Work, job: Job, run: StepRun) -> None:
        """The step's request ended, or it no longer waits: its slot goes to the best waiting."""
        slots = self._gate(job, run)
        holder = _holder(job, run)
        if run.status is StepStatus.QUEUED:
            slots.leave(_rank(job, run))
            self._cancel_timer(timers.step_release(job.id, run.name, run.attempt + 1))
        if holder not in slots.holders:
            return
        slots.holders.discard(holder)
        while slots.free > 0 and slots.waiting:
            _, _, next_holder = slots.waiting.pop(0)
            job_id, _, step = next_holder.partition(":")
            waiting = self.state.jobs[job_id]
            slots.holders.add(next_holder)
            attempt = waiting.steps[step].attempt + 1
            self._start_timer(timers.step_release(job_id, step, attempt), self.at)
