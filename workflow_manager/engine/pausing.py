"""Pausing one job: no new request of its tree goes out and its timers wait, until it resumes.

A `PauseRequested` (journaled, so a paused job is paused again after a restart) pauses a
running top-level job. From then on the `Pauses` part holds back each request of the job or of
its children (`pause_held`) and each of their timers that comes due (`timer_held`), in
order; requests already in flight finish and their results are kept, so steps may still
complete and their dependents become ready (and are held). Resuming sends the held requests,
in the order they were held, and fires the held timers at once. Cancelling a paused job lets go
of what it held first, so its on_cancel steps run.

A part every workflow may use (any job can be paused), yet free when nothing is paused: the core
calls its per-step points only while the state's set of paused jobs is not empty.
"""

from __future__ import annotations

from workflow_manager.engine.commands import JobPauseSet, Refused
from workflow_manager.engine.control import control_target
from workflow_manager.engine.events import PauseRequested
from workflow_manager.engine.extension import Part, Work
from workflow_manager.engine.state import Job, StepRun
from workflow_manager.engine.timers import HELD_WORK, Timer, parse_timer

__all__ = ["Pauses", "pause"]


def pause(work: Work, event: PauseRequested) -> None:
    """Pause a running top-level job, or resume a paused one; refused (with why) otherwise."""
    action = "pause" if event.paused else "resume"
    job = control_target(work, event.job_id, action)
    if job is None:
        return
    if event.paused == job.paused:
        state = "paused already" if job.paused else "not paused"
        work.commands.append(Refused(job.id, action, f"job {job.id} is {state}", "conflict"))
        return
    if event.paused and not job.is_running:
        reason = f"job {job.id} is {job.status}; only a running job can be paused"
        work.commands.append(Refused(job.id, action, reason, "conflict"))
        return
    work.commands.append(JobPauseSet(job.id, job.root_id, job.workflow.name, event.paused, work.at))
    if event.paused:
        job.paused, job.held, job.held_timers = True, [], []
        work.state.paused.add(job.id)
        return
    held, timers = _let_go(work, job)
    for job_id, step, released in held:
        owner = work.state.jobs.get(job_id)
        run = owner.steps.get(step) if owner is not None else None
        if owner is not None and run is not None and owner.is_live(step):
            work.dispatch(owner, run, released)
    for timer in timers:
        work.start_timer(timer, work.at)  # due now: it fires as the next event


def _let_go(work: Work, job: Job) -> tuple[list[tuple[str, str, bool]], list[Timer]]:
    """Unpause `job`: what it held, for the caller to send or drop."""
    held = job.held or []
    timers = [timer for key in job.held_timers or [] if (timer := parse_timer(key)) is not None]
    job.paused, job.held, job.held_timers = False, None, None
    work.state.paused.discard(job.id)
    return held, timers


def _hold(work: Work, job: Job, run: StepRun, released: bool) -> bool:
    """Hold `run`'s request back if its job's tree is paused (`released`: a slot is its)."""
    root = _paused_root(work, job)
    if root is None:
        return False
    assert root.held is not None  # set while paused
    root.held.append((job.id, run.name, released))
    return True


def _paused_root(work: Work, job: Job) -> Job | None:
    """The paused top-level job `job` belongs to, if its tree is paused."""
    if not work.state.paused or job.root_id not in work.state.paused:
        return None
    return work.state.jobs.get(job.root_id)


class Pauses(Part):
    """Holds back the requests and timers of a paused job's tree (any workflow)."""

    def pause_held(self, work: Work, job: Job, run: StepRun, released: bool) -> bool:
        return _hold(work, job, run, released)

    def timer_held(self, work: Work, key: str, timer: Timer, job: Job) -> bool:
        if isinstance(timer, HELD_WORK):
            return False  # a slot coming free is about other jobs: it never waits
        root = _paused_root(work, job)
        if root is None:
            return False
        assert root.held_timers is not None  # set while paused
        root.held_timers.append(key)
        return True

    def cancel_held(self, work: Work, job: Job) -> bool:
        if job.paused:
            _let_go(work, job)  # cancelled: what it held is dropped, its on_cancel steps run
        return False

    def job_settled(self, work: Work, job: Job) -> None:
        if job.paused:
            _let_go(work, job)
