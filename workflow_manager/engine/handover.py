"""Job trees handed over to another manager: forgetting them, and everything they hold.

A partitioned manager that gives a partition up (balancing) stops running its jobs: their
journal rows stay, and the manager that takes the partition replays them. Here the engine
lets go of each tree in memory: its jobs, its timers, the slots and places it holds in
concurrency limits, its unique key, its compensations in flight. Nothing else changes, and no
request goes out: the trees are not ended, only no longer ours.
"""

from __future__ import annotations

from collections.abc import Iterable

from workflow_manager.engine.bulk import let_go as let_go_of_bulks
from workflow_manager.engine.commands import CancelTimer, Command, JobsReleased
from workflow_manager.engine.snapshot import descendants, forget
from workflow_manager.engine.state import EngineState, Slots
from workflow_manager.engine.timers import parse_timer

__all__ = ["hand_over"]


def _job_of(holder: str) -> str:
    """The job of a limit's holder: a job id, or `<job id>:<step>` for a step's request."""
    return holder.partition(":")[0]


def _let_go(slots: Slots, doomed: set[str]) -> None:
    """Remove the doomed jobs' holds and places from one concurrency limit."""
    slots.holders = {h for h in slots.holders if _job_of(h) not in doomed}
    slots.waiting.keep_only(lambda rank: _job_of(rank[2]) not in doomed)


def hand_over(state: EngineState, roots: Iterable[str]) -> list[Command]:
    """Forget the job trees of `roots` (top-level job ids; unknown ones are skipped), and the
    bulks under way among them (`bulk:<id>`); the commands cancel their timers, then name
    every job let go (`JobsReleased`)."""
    roots = list(roots)  # read twice
    let_go_of_bulks(state, roots)
    doomed: set[str] = set()
    for root in roots:
        job = state.jobs.get(root)
        if job is None or job.parent is not None:
            continue
        doomed.add(job.id)
        doomed.update(child.id for child in descendants(state, job))
        forget(state, job)
    if not doomed:
        return []
    commands: list[Command] = []
    for key in [key for key in state.timers if _timer_job(key) in doomed]:
        del state.timers[key]
        commands.append(CancelTimer(key))
    for limits in (state.scopes, state.gates):
        for slots in limits.values():
            _let_go(slots, doomed)
    for window in state.rates.values():
        # A window is its partition's (`quota_name`): all of its line leaves with the trees.
        window.waiting.keep_only(lambda rank: _job_of(rank[2]) not in doomed)
        if window.armed is not None and _job_of(window.armed) in doomed:
            window.armed = None  # its timer was cancelled above
    state.unique = {key: job for key, job in state.unique.items() if job not in doomed}
    state.compensating = {
        corr: job for corr, job in state.compensating.items() if job not in doomed
    }
    state.paused -= doomed  # the next owner replays the pause with the rest
    commands.append(JobsReleased(tuple(sorted(doomed))))
    return commands


def _timer_job(key: str) -> str | None:
    timer = parse_timer(key)
    return timer.job_id if timer is not None else None
