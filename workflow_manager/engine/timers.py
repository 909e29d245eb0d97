"""Timer keys, and the wait before a retry. Pure: the "random" part of a wait is a hash.

Retry waits are drawn between half the nominal delay and the nominal delay, spreading
retries of many jobs apart. The draw hashes (job, step, attempt), so a replay of the journal
computes exactly the same wait as the live engine did.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from workflow_manager.config.models import Backoff

__all__ = [
    "TimerKey",
    "step_timeout",
    "retry_due",
    "job_timeout",
    "job_start",
    "job_admit",
    "step_release",
    "compensation_timeout",
    "compensation_retry",
    "parse",
    "retry_wait_s",
]

_STEP_TIMEOUT = "timeout"
_RETRY = "retry"
_JOB_TIMEOUT = "job-timeout"
_JOB_START = "start"
# Held-back work given a slot: due at once, but journaled when it fires, under the job it
# starts, so a replay of only the running jobs follows what was decided (admission, gates).
_JOB_ADMIT = "admit"
_STEP_RELEASE = "release"
# A compensation's timers name it by its place in its job's compensations: its name alone
# may repeat (the same task step's compensation, once per child).
_COMPENSATION_TIMEOUT = "compensation-timeout"
_COMPENSATION_RETRY = "compensation-retry"
_WITH_STEP = (_STEP_TIMEOUT, _RETRY, _COMPENSATION_TIMEOUT, _COMPENSATION_RETRY, _STEP_RELEASE)


@dataclass(frozen=True, slots=True)
class TimerKey:
    """A parsed timer key: what kind of timer, for which job, step and attempt."""

    kind: str
    job_id: str
    step: str | None = None
    attempt: int | None = None

    @property
    def is_step_timeout(self) -> bool:
        """A step attempt's reply deadline."""
        return self.kind == _STEP_TIMEOUT

    @property
    def is_retry(self) -> bool:
        """The end of the wait before a retry."""
        return self.kind == _RETRY

    @property
    def is_job_timeout(self) -> bool:
        """The whole job's deadline."""
        return self.kind == _JOB_TIMEOUT

    @property
    def is_held_work(self) -> bool:
        """A queued job or a step held by its concurrency limit, given its slot."""
        return self.kind in (_JOB_ADMIT, _STEP_RELEASE)

    @property
    def is_job_start(self) -> bool:
        """A delayed job's start time."""
        return self.kind == _JOB_START

    @property
    def is_compensation(self) -> bool:
        """A compensation's reply deadline or retry wait (`step` is its index)."""
        return self.kind in (_COMPENSATION_TIMEOUT, _COMPENSATION_RETRY)

    @property
    def is_compensation_timeout(self) -> bool:
        """A compensation attempt's reply deadline."""
        return self.kind == _COMPENSATION_TIMEOUT


def step_timeout(job_id: str, step: str, attempt: int) -> str:
    """The key of a step attempt's reply deadline."""
    return f"{_STEP_TIMEOUT}:{job_id}:{step}:{attempt}"


def retry_due(job_id: str, step: str, attempt: int) -> str:
    """The key of the wait before `attempt` of a step is dispatched."""
    return f"{_RETRY}:{job_id}:{step}:{attempt}"


def job_timeout(job_id: str) -> str:
    """The key of a job's deadline."""
    return f"{_JOB_TIMEOUT}:{job_id}"


def job_start(job_id: str) -> str:
    """The key of a delayed job's start time."""
    return f"{_JOB_START}:{job_id}"


def job_admit(job_id: str) -> str:
    """The key of a queued job's start, once a slot is reserved for it."""
    return f"{_JOB_ADMIT}:{job_id}"


def step_release(job_id: str, step: str, attempt: int) -> str:
    """The key of `attempt` of a step held by its concurrency limit, once a slot is reserved."""
    return f"{_STEP_RELEASE}:{job_id}:{step}:{attempt}"


def compensation_timeout(job_id: str, index: int, attempt: int) -> str:
    """The key of the reply deadline of compensation number `index` of a job."""
    return f"{_COMPENSATION_TIMEOUT}:{job_id}:{index}:{attempt}"


def compensation_retry(job_id: str, index: int, attempt: int) -> str:
    """The key of the wait before `attempt` of compensation number `index` of a job."""
    return f"{_COMPENSATION_RETRY}:{job_id}:{index}:{attempt}"


def parse(key: str) -> TimerKey | None:
    """A key back into its parts, or None when it is not one of ours."""
    kind, _, rest = key.partition(":")
    if kind in (_JOB_TIMEOUT, _JOB_START, _JOB_ADMIT) and rest:
        return TimerKey(kind, rest)
    parts = rest.split(":")
    if kind in _WITH_STEP and len(parts) == 3 and parts[2].isdigit():
        return TimerKey(kind, parts[0], parts[1], int(parts[2]))
    return None


def retry_wait_s(backoff: Backoff, job_id: str, step: str, retry: int) -> float:
    """The wait before retry number `retry`: between half the nominal delay and all of it."""
    digest = hashlib.blake2b(f"{job_id}:{step}:{retry}".encode(), digest_size=8).digest()
    fraction = int.from_bytes(digest, "big") / 2**64
    return backoff.nominal_s(retry) * (0.5 + 0.5 * fraction)
