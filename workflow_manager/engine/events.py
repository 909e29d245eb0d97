"""Events: what happened, as the engine's input. Time and ids always come in with them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Event",
    "ForkSeed",
    "ReusedChild",
    "JobSubmitted",
    "StepReplied",
    "TimerFired",
    "CancelRequested",
    "RetryRequested",
    "PauseRequested",
    "SignalReceived",
    "JobArchived",
    "JobsRecalled",
    "RecalledJob",
    "RateHistory",
    "Quota",
    "QuotasSet",
    "RateStart",
    "JobRateStart",
    "SchedulePaused",
    "ScheduleSeen",
    "BULK_ACTIONS",
    "BulkRequested",
    "BulkSlice",
    "BulkProgressed",
]

BULK_ACTIONS = ("cancel", "retry", "pause", "resume", "fork")
"""What one bulk action may do to each job it matched."""


@dataclass(frozen=True, slots=True)
class ReusedChild:
    """A completed child of the source job's task step that a fork may keep: its element
    `index`, its id, a digest of its payload (`workflow_manager.engine.forking.payload_digest`)
    and its result."""

    index: int
    job_id: str
    digest: str
    result: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ForkSeed:
    """What a fork starts from: the source job's recorded facts, and what the fork changes.

    `steps` holds each of the source's finished main steps as (status, output); the engine
    decides which of them the fork keeps. `input` is the edited input of `step`, the step the
    fork runs again from; `recorded_input` the input the source itself was given for it (the
    source was a fork too), if any. `children` ("failed" or "all") says whether a task `step`
    keeps the source's completed children (`reused`) or runs every child again.
    """

    source: str
    step: str
    status: str
    steps: dict[str, tuple[str, dict[str, Any] | None]]
    input: dict[str, Any] | None = None
    recorded_input: dict[str, Any] | None = None
    children: str = "failed"
    reused: tuple[ReusedChild, ...] = ()


@dataclass(frozen=True, slots=True)
class JobSubmitted:
    """Someone asked for a job: by trigger message, HTTP, or the CLI.

    `definition` pins the job to a workflow version by content hash; None means the current
    definition of `workflow`. `reply_to` is where the outcome notice goes, if anywhere.
    `trace_id` is the job's W3C trace (None: one derived from the job id, as for a submission
    journaled before jobs had traces); `trace_parent` the submitter's span, if it sent one.
    `not_before` delays the start to that time (unix seconds); None or a past time: now.
    `priority` (0-9, higher first) orders the job wherever the manager holds work back.
    `schedule` names the workflow's schedule whose firing this is (None: not a firing).
    `partition` is where a partitioned manager placed the job (`workflow_manager.engine.placement`):
    the job and its children stay there; None when unpartitioned (or placed by its id).
    `fork`: the job is a fork of another (`workflow_manager.engine.forking`).
    """

    job_id: str
    workflow: str
    payload: Any
    at: float
    reply_to: str | None = None
    definition: str | None = None
    trace_id: str | None = None
    trace_parent: str | None = None
    not_before: float | None = None
    priority: int = 0
    meta: dict[str, Any] | None = None  # the trigger's `x-meta`: context for every request
    schedule: str | None = None
    partition: int | None = None
    fork: ForkSeed | None = None


@dataclass(frozen=True, slots=True)
class StepReplied:
    """A worker answered `step` of `job_id`: the raw body, its `x-error` and `x-attempt` headers.

    The job id is as the reply's correlation id wrote it (any letter case). `redelivered`: the
    broker delivered this message before, unacked; a copy of the reply a step already counted
    is ignored then (`workflow_manager.engine.redelivery`).
    """

    job_id: str
    step: str
    body: bytes
    at: float
    error: str | None = None
    attempt: int | None = None
    meta_patch: str | None = None  # the reply's `x-meta-patch` header, as sent (JSON text)
    redelivered: bool = False

    @property
    def correlation_id(self) -> str:
        """The reply's correlation id, `<job-id>:<step>`, for messages about it."""
        return f"{self.job_id}:{self.step}"


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


@dataclass(frozen=True, slots=True)
class PauseRequested:
    """Someone asked to pause a running job (`paused`: no new request of its tree goes out and
    its timers wait; requests in flight finish), or to resume a paused one."""

    job_id: str
    paused: bool
    at: float


@dataclass(frozen=True, slots=True)
class SignalReceived:
    """A signal for `step` of `job_id` (HTTP, the signals queue, the CLI): its JSON object
    `payload` completes a waiting step (`wait: true`), or is kept until the step is reached."""

    job_id: str
    step: str
    payload: Any
    at: float


@dataclass(frozen=True, slots=True)
class JobArchived:
    """A settled top-level job's final snapshot is in the journal: memory may let it go.

    Not journaled itself: it changes nothing a replay of a running job could need.
    """

    job_id: str
    at: float


@dataclass(frozen=True, slots=True)
class RecalledJob:
    """An ended top-level job, as read from its journal row at a start or a take-over."""

    job_id: str
    workflow: str
    payload: dict[str, Any]
    meta: dict[str, Any] | None
    submitted_at: float


@dataclass(frozen=True, slots=True)
class JobsRecalled:
    """Ended jobs whose rules outlive them (a debounce window still open), read from the
    journal when memory is rebuilt from it: replay brings back running jobs only. Not
    journaled itself: it is read from the journal."""

    jobs: tuple[RecalledJob, ...]
    at: float


@dataclass(frozen=True, slots=True)
class RateStart:
    """A step request sent lately (attempt `attempt` of `step` of job `job_id`, to `queue`, with
    its `input` and the job's `meta`), as read from its journal row at a start or a take-over;
    `partition`: its job tree's, when partitioned (its window is the partition's)."""

    workflow: str
    step: str
    queue: str
    job_id: str
    attempt: int
    input: dict[str, Any]
    meta: dict[str, Any] | None
    at: float
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class JobRateStart:
    """A top-level job of a workflow with `rate` that started lately (its first start: job
    `job_id` of `workflow`, with its `payload` and `meta` as submitted), as read from the
    journal at a start or a take-over; `partition`: its tree's, when partitioned."""

    workflow: str
    job_id: str
    payload: dict[str, Any]
    meta: dict[str, Any] | None
    at: float
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class RateHistory:
    """The step requests sent within their rate limits' windows, oldest first, read from the
    journal when memory is rebuilt from it (replay brings back running jobs only, and a job
    that ended within a window took a start too); `jobs`, likewise, the top-level jobs started
    within their workflows' `rate` windows. Not journaled itself: it is read from the journal.
    A start it shares with a replayed one counts once."""

    starts: tuple[RateStart, ...]
    at: float
    jobs: tuple[JobRateStart, ...] = ()


@dataclass(frozen=True, slots=True)
class JobsHandedOver:
    """Another manager runs the job trees of `roots` from now on (their partition was given
    up): memory lets them go. Not journaled: their rows stay for the manager that takes them."""

    roots: tuple[str, ...]
    at: float


@dataclass(frozen=True, slots=True)
class Quota:
    """How much of limit `limit` the jobs of `partition` may use (`QuotasSet`).

    `limit` names one limit that holds across managers, as `QuotaUse` does: `jobs/all`
    (`max_running_jobs`), `jobs/limit:<name>:<key JSON>` (a `limits:` entry's key),
    `step/<workflow>:<flow>:<step>` (a step's `concurrency`),
    `rate/step:<workflow>:<flow>:<step>:<key JSON>` (a step's `rate` window) or
    `rate/job:<workflow>:<key JSON>` (a workflow's `rate` window)."""

    limit: str
    partition: int
    quota: int


@dataclass(frozen=True, slots=True)
class QuotasSet:
    """Several managers: this manager's quotas of the limits that hold across the cluster,
    for the partitions it runs (`workflow_manager.cluster.quotas` decides them). A quota set
    below what its partition uses now takes nothing back: the work under way finishes, and
    nothing more starts until the use is under it; a quota raised releases waiting work at
    once. `running`, when given, are the partitions this manager runs: the quotas of any
    other are forgotten. Answered by `QuotasUsed`, with every limit in use and where it stands
    (empty `quotas` only asks). Not journaled: the releases it makes are, when their timers
    fire."""

    quotas: tuple[Quota, ...]
    at: float
    running: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class SchedulePaused:
    """Someone paused (`paused`) or resumed schedule `schedule` of `workflow`: journaled."""

    workflow: str
    schedule: str
    paused: bool
    at: float


@dataclass(frozen=True, slots=True)
class ScheduleSeen:
    """A manager started serving schedule `schedule` of `workflow` at `at`: journaled the
    first time (the schedule exists from then: nothing before it is caught up)."""

    workflow: str
    schedule: str
    at: float


@dataclass(frozen=True, slots=True)
class BulkRequested:
    """Someone asked for one action (`BULK_ACTIONS`) on many top-level jobs: those a filter
    matched when asked (`filter`, kept to show it), in order; a job that matches later is not
    among them. Journaled; carried out in slices (`BulkSlice`). `params`: a fork's options."""

    bulk_id: str
    action: str
    job_ids: tuple[str, ...]
    at: float
    params: dict[str, Any] | None = None
    filter: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class BulkSlice:
    """The next jobs of bulk `bulk_id` from position `start`: each job's own event, in order
    (a cancel, retry, pause or resume request, or a fork's submission). Refused when `start`
    is not where the bulk stands: that slice was carried out already (before a restart).
    `ended`: (job id, status) of those of its jobs that ended and left memory, as the journal
    says, so a refusal can say how they ended."""

    bulk_id: str
    start: int
    events: tuple[CancelRequested | RetryRequested | PauseRequested | JobSubmitted, ...]
    at: float
    ended: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class BulkProgressed:
    """A slice of a bulk as its journal row recorded it: replayed, it moves the bulk on
    without acting again (each job's own rows replay what the slice did to it)."""

    bulk_id: str
    start: int
    count: int
    changed: int
    refused: int
    errors: tuple[tuple[str, str], ...]
    at: float


Event = (
    JobSubmitted
    | StepReplied
    | TimerFired
    | CancelRequested
    | RetryRequested
    | PauseRequested
    | SignalReceived
    | JobArchived
    | JobsHandedOver
    | JobsRecalled
    | RateHistory
    | QuotasSet
    | SchedulePaused
    | ScheduleSeen
    | BulkRequested
    | BulkSlice
    | BulkProgressed
)
