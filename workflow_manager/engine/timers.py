"""Timer keys as a closed union of dataclasses, their text form, and the wait before a retry.

Inside the engine a timer is one of the `Timer` classes below, dispatched with `match`. The
state, the commands and the journal hold its text (`Timer.key`, e.g. `timeout:<job>:<step>:2`),
parsed back at the edge by `parse_timer`: the format is the one journals have always held, so
recovery reads old journals unchanged. Held-back work given a slot (`JobAdmit`, `StepRelease`)
is due at once (a throttled step's `RateRelease`, a job's `JobRateRelease`: at its turn) but
journaled when it fires, under the job it starts, so a replay of only the running jobs follows
what was decided (admission, gates, rates).

Retry waits are drawn between half the nominal delay and the nominal delay, spreading retries
of many jobs apart. The draw hashes (job, step, attempt), so a replay of the journal computes
exactly the same wait as the live engine did.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from workflow_manager.config.models import Backoff

__all__ = [
    "HELD_WORK",
    "CompensationRetry",
    "CompensationTimeout",
    "JobAdmit",
    "JobRateRelease",
    "JobStart",
    "JobTimeout",
    "RateRelease",
    "RetryDue",
    "StepRelease",
    "StepTimeout",
    "Timer",
    "TimerKey",
    "compensation_retry",
    "compensation_timeout",
    "job_admit",
    "job_rate_release",
    "job_start",
    "job_timeout",
    "parse",
    "parse_timer",
    "rate_release",
    "retry_due",
    "retry_wait_s",
    "step_release",
    "step_timeout",
]


@dataclass(frozen=True, slots=True)
class StepTimeout:
    """A step attempt's reply deadline (or a waiting step's wait for its signal)."""

    job_id: str
    step: str
    attempt: int

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"timeout:{self.job_id}:{self.step}:{self.attempt}"


@dataclass(frozen=True, slots=True)
class RetryDue:
    """The end of the wait before `attempt` of a step is dispatched."""

    job_id: str
    step: str
    attempt: int

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"retry:{self.job_id}:{self.step}:{self.attempt}"


@dataclass(frozen=True, slots=True)
class JobTimeout:
    """The whole job's deadline."""

    job_id: str

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"job-timeout:{self.job_id}"


@dataclass(frozen=True, slots=True)
class JobStart:
    """A delayed job's start time."""

    job_id: str

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"start:{self.job_id}"


@dataclass(frozen=True, slots=True)
class JobAdmit:
    """A queued job's start, once a slot is reserved for it (held-back work)."""

    job_id: str

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"admit:{self.job_id}"


@dataclass(frozen=True, slots=True)
class JobRateRelease:
    """A queued job's start under its workflow's `rate`, due when the window lets its turn go
    (held-back work: `workflow_manager.engine.jobrates`)."""

    job_id: str

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"job-rate:{self.job_id}"


@dataclass(frozen=True, slots=True)
class StepRelease:
    """`attempt` of a step held by its concurrency limit, once a slot is reserved (held-back
    work)."""

    job_id: str
    step: str
    attempt: int

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"release:{self.job_id}:{self.step}:{self.attempt}"


@dataclass(frozen=True, slots=True)
class RateRelease:
    """`attempt` of a step throttled by its rate limit, due when the window lets its turn go
    (held-back work: `workflow_manager.engine.rates`)."""

    job_id: str
    step: str
    attempt: int

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"rate:{self.job_id}:{self.step}:{self.attempt}"


@dataclass(frozen=True, slots=True)
class CompensationTimeout:
    """The reply deadline of compensation number `index` of a job (its name alone may repeat:
    the same task step's compensation, once per child)."""

    job_id: str
    index: int
    attempt: int

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"compensation-timeout:{self.job_id}:{self.index}:{self.attempt}"


@dataclass(frozen=True, slots=True)
class CompensationRetry:
    """The wait before `attempt` of compensation number `index` of a job."""

    job_id: str
    index: int
    attempt: int

    @property
    def key(self) -> str:
        """The text form the state and the journal hold."""
        return f"compensation-retry:{self.job_id}:{self.index}:{self.attempt}"


Timer = (
    StepTimeout | RetryDue | JobTimeout | JobStart | JobAdmit | JobRateRelease | StepRelease
    | RateRelease | CompensationTimeout | CompensationRetry
)  # fmt: skip
"""Every timer the engine starts."""

HELD_WORK = (JobAdmit, JobRateRelease, StepRelease, RateRelease)
"""Held-back work given its slot: obeyed when it fires even if this state has not armed it
(a replay of only the running jobs may not have reserved that slot)."""

_OF_JOB: dict[str, type[JobTimeout | JobStart | JobAdmit | JobRateRelease]] = {
    "job-timeout": JobTimeout,
    "start": JobStart,
    "admit": JobAdmit,
    "job-rate": JobRateRelease,
}
_OF_STEP: dict[str, type[StepTimeout | RetryDue | StepRelease | RateRelease]] = {
    "timeout": StepTimeout,
    "retry": RetryDue,
    "release": StepRelease,
    "rate": RateRelease,
}
_OF_COMPENSATION: dict[str, type[CompensationTimeout | CompensationRetry]] = {
    "compensation-timeout": CompensationTimeout,
    "compensation-retry": CompensationRetry,
}


def parse_timer(key: str) -> Timer | None:
    """A key's text back into its timer, or None when it is not one of ours."""
    kind, _, rest = key.partition(":")
    of_job = _OF_JOB.get(kind)
    if of_job is not None:
        return of_job(rest) if rest else None
    parts = rest.split(":")
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    of_step = _OF_STEP.get(kind)
    if of_step is not None:
        return of_step(parts[0], parts[1], int(parts[2]))
    of_compensation = _OF_COMPENSATION.get(kind)
    if of_compensation is not None and parts[1].isdigit():
        return of_compensation(parts[0], int(parts[1]), int(parts[2]))
    return None


@dataclass(frozen=True, slots=True)
class TimerKey:
    """A flat view of a timer key for logs and journal rows: its kind, job, step and attempt
    (a compensation's `step` is its index, as text)."""

    kind: str
    job_id: str
    step: str | None = None
    attempt: int | None = None

    @property
    def is_retry(self) -> bool:
        """The end of the wait before a retry."""
        return self.kind == "retry"


def parse(key: str) -> TimerKey | None:
    """A key back into its flat view, or None when it is not one of ours (`parse_timer`'s
    reading, flattened: one parser for both)."""
    timer = parse_timer(key)
    kind = key.partition(":")[0]
    match timer:
        case JobTimeout() | JobStart() | JobAdmit() | JobRateRelease():
            return TimerKey(kind, timer.job_id)
        case StepTimeout() | RetryDue() | StepRelease() | RateRelease():
            return TimerKey(kind, timer.job_id, timer.step, timer.attempt)
        case CompensationTimeout() | CompensationRetry():
            return TimerKey(kind, timer.job_id, str(timer.index), timer.attempt)
    return None


def step_timeout(job_id: str, step: str, attempt: int) -> str:
    """The key of a step attempt's reply deadline."""
    return StepTimeout(job_id, step, attempt).key


def retry_due(job_id: str, step: str, attempt: int) -> str:
    """The key of the wait before `attempt` of a step is dispatched."""
    return RetryDue(job_id, step, attempt).key


def job_timeout(job_id: str) -> str:
    """The key of a job's deadline."""
    return JobTimeout(job_id).key


def job_start(job_id: str) -> str:
    """The key of a delayed job's start time."""
    return JobStart(job_id).key


def job_admit(job_id: str) -> str:
    """The key of a queued job's start, once a slot is reserved for it."""
    return JobAdmit(job_id).key


def job_rate_release(job_id: str) -> str:
    """The key of a queued job's start under its workflow's rate, due at its turn."""
    return JobRateRelease(job_id).key


def step_release(job_id: str, step: str, attempt: int) -> str:
    """The key of `attempt` of a step held by its concurrency limit, once a slot is reserved."""
    return StepRelease(job_id, step, attempt).key


def rate_release(job_id: str, step: str, attempt: int) -> str:
    """The key of `attempt` of a step throttled by its rate limit, due at its turn."""
    return RateRelease(job_id, step, attempt).key


def compensation_timeout(job_id: str, index: int, attempt: int) -> str:
    """The key of the reply deadline of compensation number `index` of a job."""
    return CompensationTimeout(job_id, index, attempt).key


def compensation_retry(job_id: str, index: int, attempt: int) -> str:
    """The key of the wait before `attempt` of compensation number `index` of a job."""
    return CompensationRetry(job_id, index, attempt).key


def retry_wait_s(backoff: Backoff, job_id: str, step: str, retry: int) -> float:
    """The wait before retry number `retry`: between half the nominal delay and all of it."""
    digest = hashlib.blake2b(f"{job_id}:{step}:{retry}".encode(), digest_size=8).digest()
    fraction = int.from_bytes(digest, "big") / 2**64
    return backoff.nominal_s(retry) * (0.5 + 0.5 * fraction)
