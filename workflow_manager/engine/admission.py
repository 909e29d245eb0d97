"""Concurrency limits of top-level jobs: the workflow's `concurrency` (per key) and the global
`max_running_jobs`. A job over a limit waits with status `queued`; as slots free up, the best
waiting job (highest priority, then oldest) gets one reserved and a start timer due at once.

The start is journaled when its timer fires, under the job it starts, and is obeyed as it
comes: recovery replays only the jobs still running, so a replay may see free slots where the
live run saw none. Slots it reserved that way give way to a journaled start (`_make_room`).

A part of the engine's `Transition` (see `workflow_manager.engine.work`), like
`workflow_manager.engine.control`.
"""

from __future__ import annotations

from workflow_manager.config.models import Workflow
from workflow_manager.engine import timers
from workflow_manager.engine.commands import JobQueued
from workflow_manager.engine.state import Job, JobStatus, Rank, Slots
from workflow_manager.engine.work import Work

__all__ = ["Admission", "ALL_JOBS", "concurrency_scope"]

ALL_JOBS = "all"
"""The scope of `max_running_jobs`, which every top-level job counts against."""


def concurrency_scope(workflow: Workflow, data: dict) -> str:
    """The scope of `workflow`'s `concurrency` limit a job reading `data` counts against (its
    key's value; one scope for the whole workflow without a key). The workflow has one."""
    assert workflow.concurrency is not None  # only asked of workflows with `concurrency`
    return f"workflow:{workflow.name}:{workflow.concurrency.key_of(data)}"


def _rank(job: Job) -> Rank:
    return (-job.priority, job.queued_at or job.submitted_at, job.id)


class Admission:
    """Queue a top-level job over its limits; start the best queued ones as slots free up."""

    def _scopes_of(self: Work, workflow: Workflow, payload: dict) -> tuple[str, ...]:
        """The limits a new top-level job counts against, creating their slots on first use."""
        scopes: list[str] = []
        if workflow.concurrency is not None:
            scope = concurrency_scope(workflow, payload)
            slots = self.state.scopes.setdefault(scope, Slots(workflow.concurrency.limit))
            slots.limit = workflow.concurrency.limit  # a new definition's limit counts now
            scopes.append(scope)
        if self.state.max_running_jobs is not None:
            slots = self.state.scopes.setdefault(ALL_JOBS, Slots(self.state.max_running_jobs))
            slots.limit = self.state.max_running_jobs
            scopes.append(ALL_JOBS)
        return tuple(scopes)

    def _enqueue(self: Work, job: Job) -> None:
        """A new job waits for its slots; one may be free at once."""
        job.status = JobStatus.QUEUED
        job.queued_at = self.at
        self.commands.append(
            JobQueued(
                job.id,
                job.workflow.name,
                job.workflow.content_hash,
                job.flow.name,
                job.payload,
                job.submitted_at,
                self.at,
                job.priority,
                job.scopes,
                job.trace_id,
            )  # fmt: skip
        )
        for scope in job.scopes:
            self.state.scopes[scope].wait(_rank(job))
        self._fill(job.scopes[0])

    def _fill(self: Work, scope: str) -> None:
        """Reserve free slots of `scope` for its best waiting jobs that fit all their limits."""
        slots = self.state.scopes[scope]
        index = 0
        while slots.free > 0 and index < len(slots.waiting):
            job = self.state.jobs[slots.waiting[index][2]]
            if all(self.state.scopes[s].free > 0 for s in job.scopes):
                self._reserve(job)
            else:
                index += 1

    def _reserve(self: Work, job: Job) -> None:
        rank = _rank(job)
        for scope in job.scopes:
            slots = self.state.scopes[scope]
            slots.leave(rank)
            slots.holders.add(job.id)
        self._start_timer(timers.job_admit(job.id), self.at)

    def _job_start_due(self: Work, job: Job) -> None:
        """A queued job's start timer fired: it runs now (the journal says it did)."""
        rank = _rank(job)
        for scope in job.scopes:
            slots = self.state.scopes[scope]
            if job.id not in slots.holders:
                slots.leave(rank)
                slots.holders.add(job.id)
                self._make_room(scope, job.id)
        job.status = JobStatus.RUNNING
        self.commands.append(self.started(job))
        if job.workflow.timeout is not None:
            self._start_timer(timers.job_timeout(job.id), self.at + job.workflow.timeout)
        self.ready.extend((job, run) for run in job.steps.values() if run.waiting_on == 0)

    def _make_room(self: Work, scope: str, keep: str) -> None:
        """Over the limit after a journaled start: take back the worst reservations."""
        slots = self.state.scopes[scope]
        while slots.free < 0:
            reserved = [
                self.state.jobs[h] for h in slots.holders
                if h != keep and self.state.jobs[h].status is JobStatus.QUEUED
            ]  # fmt: skip
            if not reserved:
                return  # running jobs alone: a retry may run over the limit
            worst = max(reserved, key=_rank)
            self._cancel_timer(timers.job_admit(worst.id))
            for other in worst.scopes:
                self.state.scopes[other].holders.discard(worst.id)
                self.state.scopes[other].wait(_rank(worst))
            for other in worst.scopes:
                if other != scope:
                    self._fill(other)

    def _release_job(self: Work, job: Job) -> None:
        """A job holding or waiting for slots has ended: its slots go to the best waiting."""
        rank = _rank(job)
        self._cancel_timer(timers.job_admit(job.id))
        for scope in job.scopes:
            slots = self.state.scopes[scope]
            slots.leave(rank)
            slots.holders.discard(job.id)
        for scope in job.scopes:
            self._fill(scope)

    def _full_limit(self: Work, job: Job) -> str | None:
        """Why a failed job may not run again now: a limit it counts against is full."""
        for scope in job.scopes:
            slots = self.state.scopes[scope]
            if slots.free <= 0:
                if scope == ALL_JOBS:
                    limit = f"--max-running-jobs ({slots.limit})"
                else:
                    key = scope.split(":", 2)[2]
                    limit = (
                        f"the concurrency limit ({slots.limit} running) of workflow "
                        f"'{job.workflow.name}' for key {key}"
                    )
                return f"{limit} is reached; retry job {job.id} once one of those jobs has ended"
        return None

    def _hold_again(self: Work, job: Job) -> None:
        """A retried job runs again at once, holding its slots (`_full_limit` said one is free)."""
        for scope in job.scopes:
            self.state.scopes[scope].holders.add(job.id)

    def _cancel_queued(self: Work, job: Job) -> None:
        """Cancel a job that never started: no on_cancel steps, nothing to stop."""
        job.status = JobStatus.CANCELLED
        job.error = {"step": None, "message": "cancelled on request while queued"}
        job.finished_at = self.at
        self._settle(job)
