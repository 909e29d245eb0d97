"""Events: what happened, as the engine's input. Time and ids always come in with them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Event",
    "JobSubmitted",
    "StepReplied",
    "TimerFired",
    "CancelRequested",
    "RetryRequested",
]


@dataclass(frozen=True, slots=True)
class JobSubmitted:
    """Someone asked for a job: by trigger message, HTTP, or the CLI.

    `definition` pins the job to a workflow version by content hash; None means the current
    definition of `workflow`. `reply_to` is where the outcome notice goes, if anywhere.
    """

    job_id: str
    workflow: str
    payload: Any
    at: float
    reply_to: str | None = None
    definition: str | None = None


@dataclass(frozen=True, slots=True)
class StepReplied:
    """A worker answered a step: the raw body, plus the `x-error` and `x-attempt` headers if set."""

    correlation_id: str
    body: bytes
    at: float
    error: str | None = None
    attempt: int | None = None


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A timer the engine asked for (StartTimer) has come due."""

    key: str
    at: float


@dataclass(frozen=True, slots=True)
class CancelRequested:
    """Someone asked to cancel a job (HTTP DELETE, or the CLI)."""

    job_id: str
    at: float


@dataclass(frozen=True, slots=True)
class RetryRequested:
    """Someone asked to run a failed job again from where it failed."""

    job_id: str
    at: float


Event = JobSubmitted | StepReplied | TimerFired | CancelRequested | RetryRequested
