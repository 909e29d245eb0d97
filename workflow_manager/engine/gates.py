"""Step concurrency: at most `concurrency` requests of a step outstanding, all jobs and their
children together. A dispatch over the limit waits in the manager (step status `queued`); as
requests end, the waiting one whose turn it is (highest priority, then oldest; with
`fairness`, round-robin across keys) gets the slot reserved and a release timer due at once,
which dispatches it when it fires.

As for queued jobs (`workflow_manager.engine.admission`), the release is journaled under the job it
dispatches and obeyed as it comes, so a replay of only the running jobs follows the live run.

A part (`workflow_manager.engine.extension.Part`).
"""

from __future__ import annotations

from workflow_manager.config.models import Workflow
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.fairshares import step_share
from workflow_manager.engine.quotas import STEP, quota_limit, quota_name
from workflow_manager.engine.state import EngineState, Job, Rank, Slots, StepRun, StepStatus
from workflow_manager.engine.timers import StepRelease, Timer

__all__ = ["StepGates", "fill"]


def _holder(job: Job, run: StepRun) -> str:
    return f"{job.id}:{run.name}"


def _rank(job: Job, run: StepRun) -> Rank:
    return (-job.priority, run.queued_at or 0.0, _holder(job, run))


class StepGates(Part):
    """Hold dispatches of a step with `concurrency` until one of its slots is free."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a step that has `concurrency`."""
        return any(step.concurrency is not None for step in every_step(workflow))

    timers = (StepRelease,)

    def dispatch_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """The step's next attempt waits for a slot (reserved at once if one is free)."""
        if run.spec.concurrency is None:
            return False
        run.status = StepStatus.QUEUED
        run.queued_at = work.at
        slots = _gate(work.state, job, run, refresh=True)  # a new definition's limit counts now
        if slots.free > 0:
            slots.holders.add(_holder(job, run))
            slots.waiting.took_turn(step_share(work.state, job, run))
            work.start_timer(StepRelease(job.id, run.name, run.attempt + 1), work.at)
        else:
            slots.wait(_rank(job, run), step_share(work.state, job, run))
        return True

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A held step's release timer fired: dispatch it now (the journal says it was)."""
        match timer:
            case StepRelease(step=step, attempt=attempt) if job is not None:
                run = job.steps.get(step)
                if (
                    run is not None and run.status is StepStatus.QUEUED
                    and attempt == run.attempt + 1 and job.is_live(run.name)
                ):  # fmt: skip
                    _release_due(work, job, run)
                    return
        work.ignore(key, "the job or step no longer waits for a slot")

    def request_ended(self, work: Work, job: Job, run: StepRun) -> None:
        """The step's request ended, or it no longer waits: its slot goes to the best waiting."""
        if run.spec.concurrency is None:
            return
        slots = _gate(work.state, job, run)
        holder = _holder(job, run)
        if run.status is StepStatus.QUEUED:
            slots.leave(_rank(job, run))
            work.cancel_timer(StepRelease(job.id, run.name, run.attempt + 1))
        if holder not in slots.holders:
            return
        slots.holders.discard(holder)
        _release_free(work, slots)


def fill(work: Work, name: str) -> None:
    """Gate `name` may have room (its quota grew): the best waiting take the free slots."""
    _release_free(work, work.state.gates[name])


def _release_free(work: Work, slots: Slots) -> None:
    """Each free slot goes to the waiting step whose turn it is: reserved, released at once."""
    while slots.free > 0 and (turn := slots.waiting.next()) is not None:
        slots.release(turn)
        next_holder = turn[2]
        job_id, _, step = next_holder.partition(":")
        waiting = work.state.jobs[job_id]
        slots.holders.add(next_holder)
        attempt = waiting.steps[step].attempt + 1
        work.start_timer(StepRelease(job_id, step, attempt), work.at)


def _gate(state: EngineState, job: Job, run: StepRun, refresh: bool = False) -> Slots:
    """The step's slots (partitioned: its partition's, limited by their quota), made on first
    use; `refresh`: their limit becomes `run`'s step's."""
    base = f"{job.workflow.name}:{job.flow_of(run.name).name}:{run.name}"
    name = quota_name(state, base, job)
    slots = state.gates.get(name)
    if slots is None or refresh:
        limit = quota_limit(state, STEP, name, run.spec.concurrency or 1)
        if slots is None:
            slots = state.gates[name] = Slots(limit)
        slots.limit = limit
    return slots


def _release_due(work: Work, job: Job, run: StepRun) -> None:
    """Dispatch a held step, taking its slot if this state had not reserved it."""
    slots = _gate(work.state, job, run)
    holder = _holder(job, run)
    if holder not in slots.holders:
        slots.release(_rank(job, run))
        slots.holders.add(holder)
        _take_back(work, slots, holder)
    work.dispatch(job, run, released=True)


def _take_back(work: Work, slots: Slots, keep: str) -> None:
    """Over the limit after a journaled release: the worst reservations wait again."""
    while slots.free < 0:
        reserved = []
        for holder in slots.holders:
            job_id, _, step = holder.partition(":")
            job = work.state.jobs[job_id]
            if holder != keep and job.steps[step].status is StepStatus.QUEUED:
                reserved.append((_rank(job, job.steps[step]), job, job.steps[step]))
        if not reserved:
            return
        rank, job, run = max(reserved, key=lambda entry: entry[0])
        work.cancel_timer(StepRelease(job.id, run.name, run.attempt + 1))
        slots.holders.discard(_holder(job, run))
        slots.wait(rank, step_share(work.state, job, run))
