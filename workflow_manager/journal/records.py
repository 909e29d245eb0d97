"""What the journal stores: event rows (the engine's log, inbound and outbound) and job rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EventKind", "EventRow", "JobRow", "Batch", "REPLAYED_KINDS"]


class EventKind:
    """The kinds of event row. The engine's own events are replayed; the rest are records."""

    SUBMITTED = "submitted"  # a job submission (trigger, HTTP): an engine event
    REPLIED = "replied"  # a worker's reply: an engine event
    DISPATCHED = "dispatched"  # a step request published (outbound, pending until confirmed)
    NOTIFIED = "notified"  # an outcome notice to a trigger's reply_to (outbound, likewise)
    STARTED = "started"  # a job started (for reading the journal; derived, not replayed)
    QUEUED = "queued"  # a job waits under its concurrency limits (likewise)
    SCHEDULE = "schedule"  # a schedule paused or resumed: replayed (its latest row, at start)
    FIRED = "fired"  # a schedule's firing started a job (for its last job; not replayed)
    # A job was forked (filed under `forks:<source>`, root_id the fork: not replayed), so the
    # source lists its forks.
    FORKED = "forked"
    # A bulk action (under `bulk:<id>`): asked for, with its job ids in the body, and each slice
    # carried out, with the bulk's progress: both replayed while the bulk is under way.
    BULK = "bulk"
    BULK_STEP = "bulk-step"
    SCHEDULED = "scheduled"  # a job was made to start later (not replayed), with its start_at
    FINISHED = "finished"  # a job ended (likewise)
    IGNORED = "ignored"  # an event that changed nothing, with the reason
    TIMER = "timer"  # a timer came due (retry wait, reply deadline, job deadline): replayed
    CANCEL = "cancel"  # a cancel request: replayed
    RETRY = "retry"  # a retry request: replayed
    PAUSE = "pause"  # a job paused or resumed (meta `paused`): replayed
    SIGNAL = "signal"  # a signal for a waiting step (its payload in the body): replayed
    # A child job's step began to wait (not replayed): a child has no row of its own until it
    # ends, so this one tells any manager the child's top-level job, hence its partition.
    WAITING = "waiting"


REPLAYED_KINDS = (
    EventKind.SUBMITTED,
    EventKind.REPLIED,
    EventKind.TIMER,
    EventKind.CANCEL,
    EventKind.RETRY,
    EventKind.PAUSE,
    EventKind.SIGNAL,
    EventKind.SCHEDULE,
    EventKind.BULK,
    EventKind.BULK_STEP,
)


@dataclass(frozen=True, slots=True)
class EventRow:
    """One journal entry. `seq` is assigned by the journal (0 until written).

    `msg_id` is set on outbound rows only; such a row is pending until marked sent, and
    recovery publishes every pending row again.
    """

    at: float
    kind: str
    job_id: str | None = None
    root_id: str | None = None
    step: str | None = None
    attempt: int | None = None
    body: bytes | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    msg_id: str | None = None
    seq: int = 0
    sent_at: float | None = None


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job, inserted when it starts and replaced when it ends (with its final snapshot)."""

    id: str
    root_id: str
    parent_id: str | None
    workflow: str
    definition: str
    flow: str
    status: str
    submitted_at: float
    finished_at: float | None
    payload: dict[str, Any]
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    snapshot: dict[str, Any] | None = None
    # Partitioned: the partition its tree was placed in (None: by its top-level job's id). Kept
    # by the PostgreSQL journal only (jobs.partition): an SQLite journal is never partitioned.
    partition: int | None = None


@dataclass(slots=True)
class Batch:
    """Everything one inbound message changed: written in one transaction with its neighbours.

    `partition`: the partition of the job tree it writes for, which a partitioned manager's
    commit checks it still holds (None: that of its rows' top-level job ids).
    """

    events: list[EventRow] = field(default_factory=list)
    jobs: list[JobRow] = field(default_factory=list)
    sent: list[tuple[str, float]] = field(default_factory=list)  # (msg_id, sent_at)
    partition: int | None = None

    def __bool__(self) -> bool:
        return bool(self.events or self.jobs or self.sent)
