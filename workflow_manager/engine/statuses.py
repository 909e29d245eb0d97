"""Where a job and a step are in their life: their statuses, and the priorities they run at.

Part of the engine's state (`workflow_manager.engine.state` re-exports them).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ENDED_STATUSES", "MAX_PRIORITY", "JobStatus", "StepStatus"]

MAX_PRIORITY = 9
"""Job priorities run from 0 (the default) to this; higher goes first."""


class JobStatus(StrEnum):
    """Where a job is in its life."""

    QUEUED = "queued"  # held back by a concurrency limit until a slot is free
    SCHEDULED = "scheduled"  # a delayed start: it exists, and starts at its `start_at`
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


ENDED_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})
"""The statuses of a job that has ended (its on_error / on_cancel steps may still run)."""


class StepStatus(StrEnum):
    """Where one step of a job is in its life."""

    PENDING = "pending"  # not reached yet: waiting on its depends (or its job's start)
    WAITING = "waiting"  # a `wait: true` step, reached: waiting for its signal
    QUEUED = "queued"  # ready, held back by the step's concurrency limit
    THROTTLED = "throttled"  # ready, waiting for its turn under the step's rate limit
    RUNNING = "running"
    RETRYING = "retrying"  # an attempt failed; waiting out the backoff before the next one
    COMPLETED = "completed"
    FAILED = "failed"
    COMPENSATING = "compensating"  # completed; its job ended and its compensation runs now
    COMPENSATED = "compensated"  # completed, then undone by its compensation
    SKIPPED = "skipped"  # its `when` was false: no request, output {}, dependents go on
    RECOVERED = "recovered"  # it failed, and its fallback's output became its own

    @property
    def is_done(self) -> bool:
        """True for a step its dependents may go on from: completed, skipped or recovered."""
        return self in _DONE


_DONE = frozenset(
    {
        StepStatus.COMPLETED,
        StepStatus.SKIPPED,
        StepStatus.RECOVERED,
        StepStatus.COMPENSATING,
        StepStatus.COMPENSATED,
    }
)
