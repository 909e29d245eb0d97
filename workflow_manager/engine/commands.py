"""Commands: what the engine wants done, as its output. Adapters carry them out.

Each command carries everything the stages after the engine need (the journal's rows, the
messages to publish), so nothing reads the engine's state after `apply`.

Commands are plain slotted dataclasses, not frozen ones: a frozen dataclass sets each field
through `object.__setattr__`, and the engine makes several commands per event (replaying a
journal makes millions). Treat them as read-only all the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflow_manager.engine.events import Event

__all__ = [
    "Command",
    "JobPauseSet",
    "JobForked",
    "BulkProgress",
    "Subject",
    "Dispatch",
    "StepFinished",
    "JobStarted",
    "JobScheduled",
    "JobQueued",
    "ScheduleFired",
    "SchedulePauseSet",
    "ScheduleKnown",
    "StepWaiting",
    "StepThrottled",
    "JobThrottled",
    "ThrottleEnded",
    "StepSignalled",
    "JobFinished",
    "NotifyOutcome",
    "JobRejected",
    "JobDuplicate",
    "JobDebounced",
    "Ignored",
    "StartTimer",
    "CancelTimer",
    "JobsReleased",
    "QuotaUse",
    "QuotasUsed",
    "Refused",
    "JobCompensating",
    "StepCompensation",
]


@dataclass(slots=True)
class Subject:
    """The job an event concerned (None: none) and its top-level job: where the journal files it.

    Always the first command of an event that was not refused or rejected. `partition` is
    the job tree's, where it was placed (None: unpartitioned, or by its top-level job's id).
    """

    job_id: str | None
    root_id: str | None
    partition: int | None = None
    # A bulk slice does several jobs' events at once: each one's Subject names its event, for
    # the journal's row of it (None: the event applied).
    event: Event | None = None


@dataclass(slots=True)
class Dispatch:
    """Publish a step request to `queue`; `workflow` is the top-level workflow's name.

    `trace_id` is the job's trace: the request's `traceparent` names this attempt's span in it.
    `priority` is the job's (0-9): the request's AMQP priority. `partition` is the job
    tree's (None: by its top-level job's id): its reply queue, when partitioned.
    """

    job_id: str
    root_id: str
    step: str
    queue: str
    correlation_id: str
    body: dict[str, Any]
    workflow: str
    attempt: int
    trace_id: str = ""
    priority: int = 0
    meta: dict[str, Any] | None = None  # the job's metadata, sent as the `x-meta` header
    partition: int | None = None

    @property
    def message_id(self) -> str:
        """Unique per dispatch and stable across replays, so a re-publish can be recognised."""
        return f"{self.correlation_id}:{self.attempt}"


@dataclass(slots=True)
class StepFinished:
    """A step (or one attempt of it) ended, for those who watch runs: events and metrics.

    `outcome`: completed, retrying (this attempt failed; another comes) or failed (no retry
    left). `reason` for a failure: error (the worker's `x-error`, or the step could not run),
    timeout, or invalid_reply (a body that is no JSON object). `dispatched_at`: when the
    attempt was sent (when the step started, for a task step). `fan_in`: a task step with a
    join (min_success, first) or `reduce` that completed or failed, its totals: `join` (policy,
    needed, succeeded, failed, left, then) and `reduce` (batches, reduced). Nothing is
    journaled for it.
    """

    job_id: str
    root_id: str
    workflow: str
    step: str
    attempt: int
    outcome: str
    reason: str | None
    message: str | None
    dispatched_at: float | None
    at: float
    trace_id: str = ""
    fan_in: dict[str, Any] | None = None


@dataclass(slots=True)
class JobStarted:
    """A job (or child job, when `parent_id` is set) began, or began again after a retry.

    `definition` is the content hash of the workflow it runs; `flow` the workflow's or task's
    name; `submitted_at` when it was first submitted. `trace_id` and `trace_parent` as the
    job's (`workflow_manager.engine.state.Job`).
    """

    job_id: str
    root_id: str
    workflow: str
    definition: str
    flow: str
    parent_id: str | None
    payload: dict[str, Any]
    submitted_at: float
    at: float
    trace_id: str = ""
    trace_parent: str | None = None


@dataclass(slots=True)
class StepWaiting:
    """A waiting step (`wait: true`) was reached: it waits for its signal (until `timeout_at`,
    if it has a timeout). For events and metrics; a child job's is journaled too, naming its
    top-level job (so any manager finds the child's partition)."""

    job_id: str
    root_id: str
    workflow: str
    step: str
    at: float
    timeout_at: float | None = None


@dataclass(slots=True)
class StepThrottled:
    """A step's next request waits for its turn under the step's `rate`: the window lets it go
    at `until` at the earliest (later when others wait before it; None: when its partition is
    granted a quota of the rate, with several managers). Nothing is journaled for it."""

    job_id: str
    root_id: str
    workflow: str
    step: str
    at: float
    until: float | None
    trace_id: str = ""


@dataclass(slots=True)
class JobThrottled:
    """A queued top-level job waits for its turn under its workflow's `rate`: the window lets
    it go at `until` at the earliest (later when others wait before it; None while its quota
    is 0). Nothing is journaled for it."""

    job_id: str
    workflow: str
    at: float
    until: float | None
    trace_id: str = ""


@dataclass(slots=True)
class ThrottleEnded:
    """A throttled step's turn came and its request was sent, `waited_s` after it was
    throttled (for metrics); a job's, under its workflow's `rate`, has `step` "". Nothing is
    journaled for it."""

    job_id: str
    workflow: str
    step: str
    at: float
    waited_s: float


@dataclass(slots=True)
class StepSignalled:
    """A signal for a waiting step arrived: it completes the step, or (`kept`) is kept until
    the step is reached. For events and metrics."""

    job_id: str
    root_id: str
    workflow: str
    step: str
    at: float
    kept: bool = False


@dataclass(slots=True)
class JobScheduled:
    """A top-level job was made with a delayed start: it starts at `start_at` (unix seconds).

    A top-level job's JobStarted fields (`at` is when it was scheduled) and `start_at`.
    """

    job_id: str
    workflow: str
    definition: str
    flow: str
    payload: dict[str, Any]
    submitted_at: float
    start_at: float
    at: float
    trace_id: str = ""


@dataclass(slots=True)
class JobQueued:
    """A top-level job waits for a slot under its concurrency limits (status `queued`).

    `scopes` names the limits it waits for (`workflow:<name>:<key JSON>`, `all`);
    `waiting_for` the first full one as `GET /api/job/{id}` shows it (`kind`, `limit`, `key`,
    `running`, `of`; None when a slot was free and it starts at once).
    """

    job_id: str
    workflow: str
    definition: str
    flow: str
    payload: dict[str, Any]
    submitted_at: float
    at: float
    priority: int
    scopes: tuple[str, ...]
    trace_id: str = ""
    waiting_for: dict[str, Any] | None = None


@dataclass(slots=True)
class ScheduleFired:
    """A schedule's firing started job `job_id` (for metrics, and journaled as the schedule's
    last job: a `fired` row, never replayed)."""

    workflow: str
    schedule: str
    job_id: str
    at: float


@dataclass(slots=True)
class SchedulePauseSet:
    """Schedule `schedule` of `workflow` is now paused (`paused`) or running: journaled."""

    workflow: str
    schedule: str
    paused: bool
    at: float


@dataclass(slots=True)
class ScheduleKnown:
    """Schedule `schedule` of `workflow` exists from `at` (the first start that served it):
    journaled, so a later start catches up only the firings missed since then."""

    workflow: str
    schedule: str
    at: float


@dataclass(slots=True)
class JobFinished:
    """A job ended; `status` is completed, failed or cancelled. `snapshot` is its final state."""

    job_id: str
    root_id: str
    workflow: str
    definition: str
    flow: str
    status: str
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    parent_id: str | None
    payload: dict[str, Any]
    submitted_at: float
    at: float
    snapshot: dict[str, Any]
    trace_id: str = ""
    trace_parent: str | None = None


@dataclass(slots=True)
class NotifyOutcome:
    """Tell a trigger's `reply_to` how its job ended (`status`: completed, failed or cancelled)."""

    reply_to: str
    job_id: str
    root_id: str
    status: str
    body: dict[str, Any]


@dataclass(slots=True)
class JobRejected:
    """A submission was refused; `reason` is written for the person who sent it.

    `kind` is one of "invalid-id", "unknown-workflow", "invalid-payload".
    """

    job_id: str
    workflow: str
    reason: str
    reply_to: str | None
    kind: str = "invalid-payload"


@dataclass(slots=True)
class JobDuplicate:
    """A submission was not started: `existing`, an unfinished job of the same workflow, has
    its unique `key` (canonical JSON). Nothing is journaled; `reply_to` is told."""

    job_id: str
    workflow: str
    existing: str
    key: str
    reply_to: str | None


@dataclass(slots=True)
class JobDebounced:
    """Trigger `job_id` joined an open debounce window (`workflow_manager.engine.debouncing`):
    `existing`, the top-level job the window's triggers make, does its work (in `trailing`
    mode with this trigger's payload, from `ends_at`). Journaled under `existing`;
    `reply_to` is told `debounced`."""

    job_id: str
    workflow: str
    existing: str
    key: str
    reply_to: str | None
    mode: str
    ends_at: float
    at: float


@dataclass(slots=True)
class Ignored:
    """An event changed nothing (duplicate, late or stray); reported so it can be logged."""

    subject: str
    reason: str


@dataclass(slots=True)
class StartTimer:
    """Deliver TimerFired(key) at `due_at` (unix seconds), unless cancelled first."""

    key: str
    due_at: float


@dataclass(slots=True)
class CancelTimer:
    """The timer `key` is no longer wanted."""

    key: str


@dataclass(slots=True)
class JobsReleased:
    """Job trees were handed over to another manager: `jobs` (their top-level jobs and
    children) left this one's memory without ending. Streams following one of them end, so
    their clients reconnect and are routed to the new owner."""

    jobs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QuotaUse:
    """One limit that holds across managers, in one partition this manager runs: `of` the
    configured limit, `quota` how much of it this partition may use now, `used` how much it
    uses (slots held, or starts in the rate window), `waiting` the work waiting for it.
    `limit` is named as in `workflow_manager.engine.events.Quota`."""

    limit: str
    partition: int
    of: int
    quota: int
    used: int
    waiting: int


@dataclass(slots=True)
class QuotasUsed:
    """The answer to `QuotasSet`: every shared limit with a quota, a use or waiting work in
    this manager's memory, once the quotas are set."""

    uses: tuple[QuotaUse, ...]


@dataclass(slots=True)
class Refused:
    """A cancel, retry, signal or schedule pause request cannot be done; `kind` is "not-found",
    "conflict" or "invalid" (a signal whose payload is no JSON object)."""

    job_id: str
    action: str
    reason: str
    kind: str


@dataclass(slots=True)
class JobCompensating:
    """A failed or cancelled job (`reason`) starts undoing its completed steps: `count` of them.

    Its on_error / on_cancel steps run once they are done. Nothing is journaled for it.
    """

    job_id: str
    root_id: str
    workflow: str
    reason: str
    count: int
    at: float
    trace_id: str = ""


@dataclass(slots=True)
class StepCompensation:
    """A completed step of `job_id` is being undone by its compensation `compensation`.

    `outcome`: compensating (its compensation was sent), compensated, or failed (the
    compensation failed for good; `message` says why). Nothing is journaled for it.
    """

    job_id: str
    root_id: str
    workflow: str
    step: str
    compensation: str
    outcome: str
    message: str | None
    at: float
    trace_id: str = ""


@dataclass(slots=True)
class JobPauseSet:
    """A running top-level job was paused (`paused`: no new request of its tree goes out, its
    timers wait) or resumed; for those who watch runs."""

    job_id: str
    root_id: str
    workflow: str
    paused: bool
    at: float


@dataclass(slots=True)
class JobForked:
    """Job `job_id` was made as a fork of job `source`, running again from `step`: it kept
    `reused` steps with the source's outputs. Journaled under the source (so it lists its
    forks), and for those who watch runs."""

    job_id: str
    workflow: str
    source: str
    step: str
    reused: int
    at: float


@dataclass(slots=True)
class BulkProgress:
    """Where bulk `bulk_id` stands after its latest slice (`start`, `count` jobs: `changed` of
    them changed, `refused` not, the first reasons in `errors`), or just asked for (`count` 0).
    Journaled under the bulk, and for those who watch runs."""

    bulk_id: str
    action: str
    start: int
    count: int
    done: int
    total: int
    changed: int
    refused: int
    errors: tuple[tuple[str, str], ...]
    finished: bool
    at: float


Command = (
    Subject
    | Dispatch
    | StepFinished
    | JobStarted
    | JobScheduled
    | JobQueued
    | ScheduleFired
    | ScheduleKnown
    | SchedulePauseSet
    | StepWaiting
    | StepThrottled
    | JobThrottled
    | ThrottleEnded
    | StepSignalled
    | JobFinished
    | NotifyOutcome
    | JobRejected
    | JobDuplicate
    | JobDebounced
    | Ignored
    | StartTimer
    | CancelTimer
    | JobsReleased
    | QuotasUsed
    | Refused
    | JobCompensating
    | StepCompensation
    | JobPauseSet
    | JobForked
    | BulkProgress
)
