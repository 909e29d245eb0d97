"""Bulk actions: one action (cancel, retry, pause, resume, fork) on many jobs, carried out in
slices, each job exactly once, across restarts.

A `BulkRequested` fixes the jobs (those a filter matched when asked: journaled with it) and
records the bulk. The manager then sends `BulkSlice`s: each holds the next jobs' own events
(a `CancelRequested`, a fork's `JobSubmitted`...), applied here one after the other as if each
had come alone, so each job's journal rows are those it would have had. The slice's outcome is
one `BulkProgress`, journaled with those rows in one batch: a slice is carried out entirely or
not at all, and a slice that does not start where the bulk stands is refused (it was carried
out before a restart). Replaying a bulk's rows (`BulkProgressed`) moves it on without acting
again: each job's rows replay what the slice did to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from workflow_manager.engine.commands import (
    BulkProgress,
    Command,
    JobDuplicate,
    JobRejected,
    Refused,
    Subject,
)
from workflow_manager.engine.events import (
    BulkProgressed,
    BulkRequested,
    BulkSlice,
    Event,
    JobSubmitted,
)
from workflow_manager.engine.state import BulkRun, EngineState

# The engine's `apply` (which imports this module).
_Apply = Callable[[EngineState, Event], tuple[EngineState, list[Command]]]

__all__ = ["MAX_ERRORS", "bulk_journal_id", "request", "carry_out", "progressed", "let_go"]

MAX_ERRORS = 100
"""The reasons a bulk keeps for jobs its action did not change (the first ones); it counts all."""


_PREFIX = "bulk:"


def bulk_journal_id(bulk_id: str) -> str:
    """Where a bulk's rows are filed in the journal (their job_id and root_id)."""
    return f"{_PREFIX}{bulk_id}"


def request(state: EngineState, event: BulkRequested) -> list[Command]:
    """Record a new bulk action; refused when a bulk has that id already."""
    if event.bulk_id in state.bulks:
        reason = f"bulk action {event.bulk_id} exists already"
        return [Refused(event.bulk_id, "bulk", reason, "conflict")]
    total = len(event.job_ids)
    finished = total == 0
    if not finished:  # memory holds the bulks under way; the journal, every one
        state.bulks[event.bulk_id] = BulkRun(
            event.bulk_id, event.action, event.job_ids, total, event.at, event.params,
            event.filter,
        )  # fmt: skip
    key = bulk_journal_id(event.bulk_id)
    return [
        Subject(key, key),
        BulkProgress(event.bulk_id, event.action, 0, 0, 0, total, 0, 0, (), finished, event.at),
    ]


def carry_out(state: EngineState, event: BulkSlice, apply_one: _Apply) -> list[Command]:
    """Apply a slice's events in order (`apply_one`: the engine's `apply`); refused unless it
    starts where the bulk stands."""
    run = state.bulks.get(event.bulk_id)
    if run is None or event.start != run.next:
        where = "no bulk action" if run is None else f"bulk action at {run.next}"
        reason = f"slice from {event.start} of bulk {event.bulk_id}: {where}; carried out already"
        return [Refused(event.bulk_id, "bulk", reason, "conflict")]
    expected = run.job_ids[event.start : event.start + len(event.events)]
    if [_job_of(one) for one in event.events] != list(expected):
        reason = f"slice from {event.start} of bulk {event.bulk_id} is not for its jobs"
        return [Refused(event.bulk_id, "bulk", reason, "conflict")]
    key = bulk_journal_id(event.bulk_id)
    commands: list[Command] = [Subject(key, key)]
    changed, refused, errors = 0, 0, []
    ended = dict(event.ended)
    for one in event.events:
        job_id = _job_of(one)
        if job_id in ended and job_id not in state.jobs and not isinstance(one, JobSubmitted):
            refused += 1
            errors.append((job_id, _ended(job_id, ended[job_id], run.action)))
            continue
        _, done = apply_one(state, one)
        first = done[0] if done else None
        if isinstance(first, Refused | JobRejected | JobDuplicate):
            refused += 1
            errors.append((_job_of(one), _reason(first)))
            continue
        if isinstance(first, Subject):
            first.event = one  # the journal's row of this job's event
        changed += 1
        commands.extend(done)
    moved = _moved(run, event.start, len(event.events), changed, refused, errors, event.at)
    if moved.finished:
        del state.bulks[event.bulk_id]  # done: the journal answers for it from now on
    commands.append(moved)
    return commands


def progressed(state: EngineState, event: BulkProgressed) -> list[Command]:
    """A journaled slice replayed: the bulk moves on (the jobs' own rows did the rest)."""
    run = state.bulks.get(event.bulk_id)
    if run is not None and event.start == run.next:
        moved = _moved(
            run, event.start, event.count, event.changed, event.refused, list(event.errors),
            event.at,
        )  # fmt: skip
        if moved.finished:
            del state.bulks[event.bulk_id]
    return []


def let_go(state: EngineState, journal_ids: Iterable[str]) -> None:
    """Forget the bulks under way filed under those of `journal_ids` that name one (their
    partition went to another manager, which replays them from the journal and goes on)."""
    for key in journal_ids:
        if key.startswith(_PREFIX):
            state.bulks.pop(key.removeprefix(_PREFIX), None)


def _moved(
    run: BulkRun,
    start: int,
    count: int,
    changed: int,
    refused: int,
    errors: list[tuple[str, str]],
    at: float,
) -> BulkProgress:
    """Count a slice into its bulk; the bulk's progress now."""
    run.next = start + count
    run.changed += changed
    run.refused += refused
    room = MAX_ERRORS - len(run.errors)
    if room > 0:
        run.errors.extend(errors[:room])
    finished = run.next >= run.total
    return BulkProgress(
        run.bulk_id, run.action, start, count, run.next, run.total, changed, refused,
        tuple(errors[:MAX_ERRORS]), finished, at,
    )  # fmt: skip


def _ended(job_id: str, status: str, action: str) -> str:
    """Why a job that ended cannot have `action` (a retry: it is not failed)."""
    if action == "retry":
        return f"job {job_id} is {status}; only a failed job can be retried"
    return f"job {job_id} is already {status}; only a running job can be {_DONE[action]}"


_DONE = {"cancel": "cancelled", "pause": "paused", "resume": "resumed", "retry": "retried"}


def _job_of(event: Event) -> str:
    """The bulk's job an event of a slice acts on (a fork's: the job forked)."""
    if isinstance(event, JobSubmitted) and event.fork is not None:
        return event.fork.source
    return str(getattr(event, "job_id", ""))


def _reason(command: Refused | JobRejected | JobDuplicate) -> str:
    if isinstance(command, JobDuplicate):
        return f"a job with its unique key runs: {command.existing}"
    return command.reason
