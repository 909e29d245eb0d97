"""Workflow rate limits: at most `rate.limit` top-level jobs of a workflow started in any
`rate.per` seconds, per value of `rate.key` (over the payload, `meta.<field>` for metadata).

Every start of a top-level job of such a workflow goes through `hold_start`: a new submission
(`start_held`), a delayed job coming due (`workflow_manager.engine.delays`), a queued job given
its slots (`workflow_manager.engine.admission`). The job waits with status `queued`; when its
window (`workflow_manager.engine.ratewindow`, named `job:<workflow>:<key JSON>`) has room and
nothing waits in it, its turn is given at once: the start is counted now and its release timer
(`JobRateRelease`) is due now. Else it joins the window's line (highest priority, then oldest;
with `fairness`, round-robin across keys) and one release timer is armed for the line's next
turn, when the window lets a start go. The job starts when its timer fires, and only then: the
timer is journaled under the job and obeyed as it comes (held-back work), so a replay of only
the running jobs starts each job when the live run did, whatever the replay's window holds.
A start is counted once per job (the journal's history at recovery, then the replay), at the
moment it happens.

With the workflow's `concurrency` or `limits:`, those come first: a job takes its slots, then
waits for its turn under the rate while holding them (as a step does with concurrency, then
rate). Child jobs do not count. A retried job does not count again and does not wait: the
rate bounds the jobs started, and a retry resumes one that was counted when it started (a
step's own `rate` bounds the requests it sends again).

The limit a window may use is read through `rates.allowed_limit` (with several managers, the
partition's quota, which may be 0: then nothing goes until one is granted, `arm_window`).
A part (`workflow_manager.engine.extension.Part`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workflow_manager.config.models import Rate, Workflow
from workflow_manager.engine import rates
from workflow_manager.engine.commands import Command, JobQueued, JobThrottled, ThrottleEnded
from workflow_manager.engine.events import RateHistory
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.jobs import start_job
from workflow_manager.engine.metadata import key_data
from workflow_manager.engine.quotas import RATE, partition_name, quota_limit, quota_name
from workflow_manager.engine.ratewindow import RateWindow, waits_until
from workflow_manager.engine.state import EngineState, Job, JobStatus, Rank
from workflow_manager.engine.timers import JobRateRelease, Timer

__all__ = [
    "PREFIX",
    "JobRates",
    "RateWait",
    "arm_window",
    "hold_start",
    "job_window_name",
    "rate_wait",
    "rated_workflows",
    "remember_starts",
    "waits_for_turn",
]

PREFIX = "job:"
"""The names of the windows of workflow rates: `job:<workflow>:<key JSON>`."""


def job_window_name(state: EngineState, job: Job) -> str:
    """The window top-level `job`'s start counts in: `job:<workflow>:<key value>` (with
    several managers, its partition's: `quota_name`). Its workflow has a `rate`."""
    rate = job.workflow.rate
    assert rate is not None  # only jobs of workflows with a rate have a window
    return quota_name(state, _base_name(job.workflow.name, rate, job.payload, job.meta), job)


def _base_name(
    workflow: str, rate: Rate, payload: dict[str, Any], meta: dict[str, Any] | None
) -> str:
    key = rate.key_of(key_data(payload, meta)) if rate.expression is not None else "null"
    return f"{PREFIX}{workflow}:{key}"


def _rank(job: Job) -> Rank:
    return (-job.priority, job.throttled_at or 0.0, job.id)


def _window(work: Work, job: Job) -> tuple[str, RateWindow]:
    rate = job.workflow.rate
    assert rate is not None  # only asked of jobs of workflows with a rate
    name = job_window_name(work.state, job)
    return name, rates.rate_window(work.state, name, rate, work.at)


def hold_start(work: Work, job: Job) -> bool:
    """A top-level job of a workflow with `rate` is to start: it waits (`queued`) for its
    turn, which may be given at once; its release timer starts it. False when its workflow
    has no rate (it starts now)."""
    rate = job.workflow.rate
    if rate is None or job.parent is not None:
        return False
    name, window = _window(work, job)
    if job.throttled_at is not None:
        return True  # in the line already (its slots' start timer fired twice)
    fresh = job.status is not JobStatus.QUEUED  # not queued for slots before
    job.status = JobStatus.QUEUED
    if fresh:
        job.queued_at = work.at
    window.forget_before(work.at)
    limit = rates.allowed_limit(work.state, name, rate)
    throttled = False
    if window.counts(job.id):
        pass  # its start is counted already (the journal's history): its timer starts it
    elif not window.waiting and window.has_room(work.at, limit):
        window.waiting.took_turn(job.share)
        window.record(work.at, job.id)
    else:
        throttled = True
        job.throttled_at = work.at
        job.throttled_until = waits_until(window.free_at(work.at, limit))
        window.waiting.wait(_rank(job), job.share)
    if not throttled:
        work.start_timer(JobRateRelease(job.id), work.at)
    if fresh:
        work.commands.append(_queued(work.state, job))
    if throttled:
        work.commands.append(
            JobThrottled(job.id, job.workflow.name, work.at, job.throttled_until, job.trace_id)
        )
        _arm(work, window, name)
    return True


def _queued(state: EngineState, job: Job) -> JobQueued:
    wait = rate_wait(state, job)
    shown = None
    if wait is not None:
        shown = {"kind": "rate", "limit": "rate", "running": wait.started, "of": wait.of}
        if wait.key is not None:
            shown["key"] = wait.key
        if wait.until is not None:
            shown["until"] = wait.until
    return JobQueued(
        job.id, job.workflow.name, job.workflow.content_hash, job.flow.name, job.payload,
        job.submitted_at, job.queued_at or job.submitted_at, job.priority, job.scopes,
        job.trace_id, shown,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class RateWait:
    """A queued job waiting for its turn under its workflow's rate: its key's value (JSON; None
    without a key), the starts in its window, its limit (with several managers, its quota),
    and when its turn may come at the earliest (None while its quota is 0)."""

    key: str | None
    started: int
    of: int
    until: float | None


def rate_wait(state: EngineState, job: Job) -> RateWait | None:
    """How queued `job` waits under its workflow's rate; None when it does not (no rate, not
    queued, or its turn is given and it starts now)."""
    rate = job.workflow.rate
    if rate is None or job.status is not JobStatus.QUEUED:
        return None
    if job.throttled_at is None:
        return None  # not in the line: its turn is given, it starts now
    name = job_window_name(state, job)
    window = state.rates.get(name)
    if window is None:
        return None
    key = rate.key_of(key_data(job.payload, job.meta)) if rate.expression is not None else None
    of = quota_limit(state, RATE, name, rate.limit)
    return RateWait(key, len(window.starts), of, job.throttled_until)


def waits_for_turn(state: EngineState, job: Job) -> bool:
    """True while queued `job` is in this part's hands: in its workflow rate's line, or its
    turn given and its release timer due (holding its slots, if it has any: it is past its
    concurrency limits, not a job whose slots are merely reserved)."""
    return job.throttled_at is not None or JobRateRelease(job.id).key in state.timers


def _arm(work: Work, window: RateWindow, name: str) -> None:
    """Give the line's next turns: while the window has room, the head's start is counted and
    its timer is due now; then the next head's timer is armed for when the window lets a start
    go (none while the quota is 0: `arm_window` arms it once one is granted)."""
    state = work.state
    limit = quota_limit(state, RATE, name, window.limit)
    while (head := window.waiting.next()) is not None:
        job = state.jobs.get(head[2])
        if job is None or job.status is not JobStatus.QUEUED:
            window.waiting.leave(head)  # no longer ours to start (handed over)
            continue
        timer = JobRateRelease(job.id)
        due = window.free_at(work.at, limit)
        if due <= work.at:
            window.waiting.release(head)
            if window.armed == job.id:
                window.armed = None
            job.throttled_until = None
            window.record(work.at, job.id)
            work.start_timer(timer, work.at)
            continue
        job.throttled_until = waits_until(due)
        if window.armed is not None and window.armed != job.id:
            work.cancel_timer(JobRateRelease(window.armed))
            window.armed = None
        if math.isinf(due):
            if window.armed == job.id:
                work.cancel_timer(timer)
            window.armed = None
            return
        window.armed = job.id
        if state.timers.get(timer.key) != due:
            work.start_timer(timer, due)
        return


def arm_window(work: Work, name: str) -> None:
    """Window `name` may have room earlier (its quota grew): give its next turns again."""
    _arm(work, work.state.rates[name], name)


def _release(work: Work, job: Job) -> None:
    """A queued job's turn came (its timer fired; the journal says it starts): it starts now,
    counted now, and the line's next turn is armed. A timer that fired a moment early (the
    driver's clock is not the timer's) is armed again for its time."""
    name, window = _window(work, job)
    rate = job.workflow.rate
    assert rate is not None  # only jobs of workflows with a rate have a release timer
    if window.armed == job.id and not window.has_room(
        work.at, rates.allowed_limit(work.state, name, rate)
    ):
        _arm(work, window, name)
        return
    if job.throttled_at is not None:
        window.waiting.release(_rank(job))
        waited = work.at - job.throttled_at
        work.commands.append(ThrottleEnded(job.id, job.workflow.name, "", work.at, waited))
    if window.armed == job.id:
        window.armed = None
    job.throttled_at = job.throttled_until = None
    window.discard(job.id)  # counted when its turn was given: it starts now
    window.record(work.at, job.id)
    job.status = JobStatus.RUNNING
    start_job(work, job)
    work.job_running(job)
    _arm(work, window, name)


def _let_go(work: Work, job: Job) -> None:
    """A queued job that will not start (cancelled): it leaves its window's line, or gives
    back the turn given to it; the next turn is armed again."""
    name, window = _window(work, job)
    if job.throttled_at is not None:
        window.waiting.leave(_rank(job))
        job.throttled_at = job.throttled_until = None
    elif job.status is JobStatus.QUEUED and window.counts(job.id):
        window.discard(job.id)  # its turn was given: it goes to the next
    if window.armed == job.id:
        window.armed = None
    work.cancel_timer(JobRateRelease(job.id))
    _arm(work, window, name)


def _holds_slots(state: EngineState, job: Job) -> bool:
    """True when `job` holds the slots of every concurrency limit it counts against."""
    return all(job.id in state.scopes[scope].holders for scope in job.scopes)


class JobRates(Part):
    """Hold the starts of top-level jobs of a workflow with `rate` until its window lets them
    go."""

    timers = (JobRateRelease,)

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with `rate`."""
        return workflow.rate is not None

    def start_held(self, work: Work, job: Job, sub: Submission) -> bool:
        """A new job waits for its turn (a job under concurrency limits: once it has its
        slots, `workflow_manager.engine.admission`)."""
        return not job.scopes and hold_start(work, job)

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A queued job's turn came: it starts (the journal says it did)."""
        match timer:
            case JobRateRelease() if (
                job is not None and job.workflow.rate is not None
                and job.status is JobStatus.QUEUED and _holds_slots(work.state, job)
            ):  # fmt: skip
                _release(work, job)
            case _:
                work.ignore(key, "the job no longer waits for its rate")

    def cancel_held(self, work: Work, job: Job) -> bool:
        """A queued job cancelled lets go of its place or turn (admission cancels it)."""
        if job.status is JobStatus.QUEUED:
            _let_go(work, job)
        return False

    def job_settled(self, work: Work, job: Job) -> None:
        """A job still in its window's line when it ended leaves it."""
        if job.throttled_at is not None and job.parent is None:
            _let_go(work, job)


def remember_starts(state: EngineState, event: RateHistory) -> list[Command]:
    """Count the starts read from the journal in their windows, as the live run did: step
    requests (`rates.remember_history`) and top-level jobs of workflows with `rate`."""
    commands = rates.remember_history(state, event)
    for start in event.jobs:
        workflow = state.workflow(start.workflow)
        if workflow is None or workflow.rate is None:
            continue
        rate = workflow.rate
        if start.at <= event.at - rate.per:
            continue
        base = _base_name(workflow.name, rate, start.payload, start.meta)
        name = partition_name(state, base, start.partition)
        rates.rate_window(state, name, rate, event.at).record(start.at, start.job_id)
    return commands


def rated_workflows(workflows: Iterable[Workflow]) -> tuple[set[str], float]:
    """The names of the workflows with a `rate`, and their longest window: what recovery reads
    of the journal's job starts for `RateHistory`."""
    rated = {workflow.name: workflow.rate.per for workflow in workflows if workflow.rate}
    return set(rated), max(rated.values(), default=0.0)
