"""Concurrency limits of top-level jobs: the workflow's `concurrency` (per key), the nested
`limits:` of the workflow file that apply to it (per key), and the global `max_running_jobs`,
in that order (`waiting_for` names the first full one). A job over a limit waits with status
`queued`; as slots free up, the best waiting job (highest priority, then oldest, or in turn
across fairness keys) gets one reserved in every scope and a start timer due at once.

The start is journaled when its timer fires, under the job it starts, and is obeyed as it
comes: recovery replays only the jobs still running, so a replay may see free slots where the
live run saw none. Slots it reserved that way give way to a journaled start (`_make_room`).

A part (`workflow_manager.engine.extension.Part`); `enqueue` also queues a delayed job whose
start time has come.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import JobQueued
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.jobrates import hold_start, rate_wait, waits_for_turn
from workflow_manager.engine.jobs import cancel_unstarted, start_job
from workflow_manager.engine.metadata import key_data
from workflow_manager.engine.quotas import (
    JOBS,
    base_name,
    partition_name,
    quota_limit,
    tree_partition,
)
from workflow_manager.engine.state import EngineState, Job, JobStatus, Rank, Slots
from workflow_manager.engine.timers import JobAdmit, Timer

__all__ = [
    "ALL_JOBS",
    "LIMIT_PREFIX",
    "Admission",
    "LimitUse",
    "WaitingFor",
    "concurrency_scope",
    "enqueue",
    "fill",
    "limits_in_use",
    "waiting_for",
]

ALL_JOBS = "all"
"""The scope of `max_running_jobs`, which every top-level job counts against."""
LIMIT_PREFIX = "limit:"
"""The scopes of a `limits:` entry: `limit:<name>:<key JSON>`."""


def concurrency_scope(workflow: Workflow, data: dict[str, Any]) -> str:
    """The scope of `workflow`'s `concurrency` limit a job reading `data` counts against (its
    key's value; one scope for the whole workflow without a key). The workflow has one."""
    assert workflow.concurrency is not None  # only asked of workflows with `concurrency`
    return f"workflow:{workflow.name}:{workflow.concurrency.key_of(data)}"


def _rank(job: Job) -> Rank:
    return (-job.priority, job.queued_at or job.submitted_at, job.id)


class Admission(Part):
    """Queue a top-level job over its limits; start the best queued ones as slots free up."""

    timers = (JobAdmit,)

    def submission_prepared(self, work: Work, sub: Submission) -> None:
        """The limits a new top-level job counts against, creating their slots on first use."""
        workflow, state = sub.workflow, work.state
        if workflow.concurrency is None and state.max_running_jobs is None and not state.limits:
            return
        event = sub.event
        data = key_data(event.payload, event.meta)
        partition = None
        if state.quotas is not None:  # the limits but `concurrency` count per partition
            partition = tree_partition(state.quotas.count, event.job_id, event.partition)
        sub.scopes = _scopes_of(state, workflow, data, partition)

    def start_held(self, work: Work, job: Job, sub: Submission) -> bool:
        """A limited job waits for its slots (it starts when its admit timer fires, maybe at
        once)."""
        if not job.scopes:
            return False
        enqueue(work, job)
        return True

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A queued job's start timer fired: it runs now (the journal says it did)."""
        match timer:
            case JobAdmit() if job is not None and job.status is JobStatus.QUEUED:
                _start_due(work, job)
            case _:
                work.ignore(key, "the job or step no longer waits for a slot")

    def job_settled(self, work: Work, job: Job) -> None:
        """A job holding or waiting for slots has ended: its slots go to the best waiting."""
        if not job.scopes:
            return
        rank = _rank(job)
        work.cancel_timer(JobAdmit(job.id))
        for scope in job.scopes:
            slots = work.state.scopes[scope]
            slots.leave(rank)
            slots.holders.discard(job.id)
        for scope in job.scopes:
            fill(work, scope)

    def cancel_held(self, work: Work, job: Job) -> bool:
        """Cancel a job that never started: it leaves the queue (or gives back the slots
        reserved for it) now, and its on_cancel steps run, counting against no limit."""
        if job.status is not JobStatus.QUEUED:
            return False
        self.job_settled(work, job)
        cancel_unstarted(work, job, "cancelled on request while queued")
        return True

    def retry_refusal(self, work: Work, job: Job) -> str | None:
        """Why a failed job may not run again now: a limit it counts against is full (refused
        rather than queued: a limit means at most that many running, retries too)."""
        for scope in job.scopes:
            slots = work.state.scopes[scope]
            if slots.free <= 0:
                shared = "this partition's quota of " if scope != base_name(scope) else ""
                scope = base_name(scope)
                if scope == ALL_JOBS:
                    limit = f"{shared}--max-running-jobs ({slots.limit})"
                elif scope.startswith(LIMIT_PREFIX):
                    name, key = scope.removeprefix(LIMIT_PREFIX).split(":", 1)
                    limit = f"{shared}limit '{name}' ({slots.limit} running) for key {key}"
                else:
                    key = scope.split(":", 2)[2]
                    limit = (
                        f"the concurrency limit ({slots.limit} running) of workflow "
                        f"'{job.workflow.name}' for key {key}"
                    )
                return f"{limit} is reached; retry job {job.id} once one of those jobs has ended"
        return None

    def job_revived(self, work: Work, job: Job) -> None:
        """A retried job runs again at once, holding its slots (`retry_refusal` said one is
        free)."""
        for scope in job.scopes:
            work.state.scopes[scope].holders.add(job.id)


def _scopes_of(
    state: EngineState, workflow: Workflow, data: dict[str, Any], partition: int | None
) -> tuple[str, ...]:
    """The scopes a job counts in, its slots made on first use. Partitioned (`partition`),
    those of the `limits:` entries and `max_running_jobs` are the partition's, limited by its
    quota (the workflow's `concurrency` holds cluster-wide already: placed by its key)."""
    scopes: list[str] = []
    if workflow.concurrency is not None:
        scope = concurrency_scope(workflow, data)
        slots = state.scopes.setdefault(scope, Slots(workflow.concurrency.limit))
        slots.limit = workflow.concurrency.limit  # a new definition's limit counts now
        scopes.append(scope)
    for entry in state.limits:
        if entry.applies_to(workflow.name):
            base = f"{LIMIT_PREFIX}{entry.name}:{entry.key_of(data)}"
            scope = partition_name(state, base, partition)
            limit = quota_limit(state, JOBS, scope, entry.limit)
            slots = state.scopes.setdefault(scope, Slots(limit))
            slots.limit = limit  # a new file's limit counts now
            scopes.append(scope)
    if state.max_running_jobs is not None:
        scope = partition_name(state, ALL_JOBS, partition)
        limit = quota_limit(state, JOBS, scope, state.max_running_jobs)
        slots = state.scopes.setdefault(scope, Slots(limit))
        slots.limit = limit
        scopes.append(scope)
    return tuple(scopes)


def enqueue(work: Work, job: Job) -> None:
    """A job (new, or delayed and due now) waits for its slots; one may be free at once."""
    job.status = JobStatus.QUEUED
    job.queued_at = work.at
    for scope in job.scopes:
        work.state.scopes[scope].wait(_rank(job), job.share)
    waiting = waiting_for(work.state, job)  # in its lines now: the first full limit, if any
    shown = None if waiting is None else {k: v for k, v in asdict(waiting).items() if v is not None}
    work.commands.append(
        JobQueued(
            job.id,
            job.workflow.name,
            job.workflow.content_hash,
            job.flow.name,
            job.payload,
            job.submitted_at,
            work.at,
            job.priority,
            job.scopes,
            job.trace_id,
            shown,
        )  # fmt: skip
    )
    fill(work, job.scopes[0])


def fill(work: Work, scope: str) -> None:
    """Reserve free slots of `scope` for its waiting jobs, in turn, that fit all their limits."""
    slots = work.state.scopes[scope]
    for turn in slots.waiting.in_turn():  # past those full under another of their limits
        if slots.free <= 0:
            return
        job = work.state.jobs[turn[2]]
        if all(work.state.scopes[s].free > 0 for s in job.scopes):
            _reserve(work, job)


def _reserve(work: Work, job: Job) -> None:
    rank = _rank(job)
    for scope in job.scopes:
        slots = work.state.scopes[scope]
        slots.release(rank)
        slots.holders.add(job.id)
    work.start_timer(JobAdmit(job.id), work.at)


def _start_due(work: Work, job: Job) -> None:
    """A queued job starts now, taking its slots if this state had not reserved them (then,
    under its workflow's `rate`, it waits for its turn holding them: `jobrates.hold_start`)."""
    rank = _rank(job)
    for scope in job.scopes:
        slots = work.state.scopes[scope]
        if job.id not in slots.holders:
            slots.release(rank)
            slots.holders.add(job.id)
            _make_room(work, scope, job.id)
    if hold_start(work, job):
        return
    job.status = JobStatus.RUNNING
    start_job(work, job)
    work.job_running(job)


def _make_room(work: Work, scope: str, keep: str) -> None:
    """Over the limit after a journaled start: take back the worst reservations."""
    slots = work.state.scopes[scope]
    while slots.free < 0:
        reserved = [
            work.state.jobs[h] for h in slots.holders
            if h != keep and work.state.jobs[h].status is JobStatus.QUEUED
            and not waits_for_turn(work.state, work.state.jobs[h])  # started: its rate next
        ]  # fmt: skip
        if not reserved:
            return  # running jobs alone: a retry may run over the limit
        worst = max(reserved, key=_rank)
        work.cancel_timer(JobAdmit(worst.id))
        for other in worst.scopes:
            work.state.scopes[other].holders.discard(worst.id)
            work.state.scopes[other].wait(_rank(worst), worst.share)
        for other in worst.scopes:
            if other != scope:
                fill(work, other)


@dataclass(frozen=True, slots=True)
class WaitingFor:
    """The limit a queued job waits under: the first of its limits that is full.

    `kind` is `concurrency` (its workflow's), `limit` (a `limits:` entry, named by `limit`),
    `max_running_jobs` or `rate` (its workflow's, once it holds its slots); `key` the key's
    value (JSON) of a keyed limit; `running` the jobs that hold its slots (started, or about
    to; for `rate`, the jobs started in its window), `of` its limit; `until`, for `rate`, when
    its turn may come at the earliest (None while its quota is 0).
    """

    kind: str
    limit: str
    key: str | None
    running: int
    of: int
    until: float | None = None


def waiting_for(state: EngineState, job: Job) -> WaitingFor | None:
    """Which limit queued `job` waits under (in the order its scopes were made: the workflow's
    `concurrency`, the `limits:` entries in file order, `max_running_jobs`, then its workflow's
    `rate`); None when it does not wait (it is not queued, or it starts now)."""
    if job.status is not JobStatus.QUEUED:
        return None
    for scope in job.scopes:
        slots = state.scopes.get(scope)
        if slots is None:
            return None
        if job.id in slots.holders:
            break  # reserved or held: its start timer is due now, or its rate's turn next
        if slots.free <= 0:
            return _named(state, job, scope, slots)
    wait = rate_wait(state, job)
    if wait is None:
        return None
    return WaitingFor("rate", "rate", wait.key, wait.started, wait.of, wait.until)


def _named(state: EngineState, job: Job, scope: str, slots: Slots) -> WaitingFor:
    running, of = len(slots.holders), slots.limit  # partitioned: the partition's, its quota
    scope = base_name(scope)
    if scope == ALL_JOBS:
        return WaitingFor("max_running_jobs", "max_running_jobs", None, running, of)
    if scope.startswith(LIMIT_PREFIX):
        name, key = scope.removeprefix(LIMIT_PREFIX).split(":", 1)
        entry = next((e for e in state.limits if e.name == name), None)
        shown = key if entry is not None and entry.key is not None else None
        return WaitingFor("limit", name, shown, running, of)
    key = scope.split(":", 2)[2]
    keyed = job.workflow.concurrency is not None and job.workflow.concurrency.key is not None
    return WaitingFor("concurrency", "concurrency", key if keyed else None, running, of)


@dataclass(frozen=True, slots=True)
class LimitUse:
    """One key of a `limits:` entry in use: its jobs running (or starting) and queued."""

    name: str
    key: str
    running: int
    queued: int


def limits_in_use(state: EngineState) -> list[LimitUse]:
    """Every key of every `limits:` entry with jobs running or queued under it, by name then
    key (what `GET /api/limits` shows)."""
    uses = []
    for scope, slots in state.scopes.items():
        if scope.startswith(LIMIT_PREFIX) and (slots.holders or slots.waiting):
            name, key = base_name(scope).removeprefix(LIMIT_PREFIX).split(":", 1)
            uses.append(LimitUse(name, key, len(slots.holders), len(slots.waiting)))
    merged: dict[tuple[str, str], LimitUse] = {}  # partitioned: a key's partitions together
    for use in uses:
        seen = merged.get((use.name, use.key))
        if seen is not None:
            use = LimitUse(use.name, use.key, seen.running + use.running, seen.queued + use.queued)
        merged[use.name, use.key] = use
    return sorted(merged.values(), key=lambda use: (use.name, use.key))
