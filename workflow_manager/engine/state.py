"""The engine's state: every job, its steps, and the workflow definitions they run.

Plain dataclasses, updated in place by `workflow_manager.engine.apply` so each event costs O(1)
rather than a copy of the world. Two states built from the same events compare equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workflow_manager.config.joblimits import JobLimit
from workflow_manager.config.models import Flow, HandlerStep, Step, StepPolicy, Workflow
from workflow_manager.engine.childids import ChildIds
from workflow_manager.engine.fairness import NO_SHARE, FairShare, Rank, Slots
from workflow_manager.engine.fanout import DEFAULT_MAX_FANOUT_BYTES
from workflow_manager.engine.goneids import GoneIds
from workflow_manager.engine.quotas import Quotas
from workflow_manager.engine.ratewindow import RateWindow
from workflow_manager.engine.statuses import (
    ENDED_STATUSES,
    MAX_PRIORITY,
    JobStatus,
    StepStatus,
)

__all__ = [
    "ENDED_STATUSES",
    "MAX_PRIORITY",
    "Rank",
    "Slots",
    "JobStatus",
    "StepStatus",
    "StepRun",
    "ParentLink",
    "ForkedFrom",
    "BulkRun",
    "DebounceWindow",
    "Reduction",
    "CompensationRun",
    "Compensation",
    "Job",
    "EngineState",
]


@dataclass(slots=True)
class DebounceWindow:
    """One open debounce window (`workflow_manager.engine.debouncing`): the job its triggers
    make, when the window closes, and how many triggers it answered `debounced`."""

    job_id: str
    ends_at: float
    debounced: int = 0


@dataclass(slots=True)
class Reduction:
    """A task step with `reduce` (`workflow_manager.engine.reducing`): the accumulator so far,
    the finished children's results not sent yet (in the order they finished), how many the
    batch in flight holds (its results are the reducer run's input) and how many were reduced.
    `closed`: its children are all in (or its join is met); what is left is sent, then it ends."""

    accumulator: dict[str, Any]
    pending: list[Any] = field(default_factory=list)
    sending: int = 0
    reduced: int = 0
    closed: bool = False


@dataclass(slots=True)
class StepRun:
    """One step of one job: its input, output and, for a task step, its children."""

    spec: Step
    waiting_on: int
    status: StepStatus = StepStatus.PENDING
    attempt: int = 0
    # Attempts made before the current round: a job retry starts a new round with the step's
    # full retry budget, while attempt numbers keep counting up.
    round_start: int = 0
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    dispatched_at: float | None = None  # when the latest attempt was sent
    queued_at: float | None = None  # when the step's concurrency limit last held it back
    # Throttled by the step's `rate` (`workflow_manager.engine.rates`): since when, and when the
    # window lets it go at the earliest (its turn may come later when others wait first).
    throttled_at: float | None = None
    throttled_until: float | None = None
    # Task steps only: child ids in element order, their results as they finish, and how
    # many are still out, so that each child's completion is O(1).
    children: ChildIds | None = None
    child_results: list[dict[str, Any] | None] | None = None
    children_left: int = 0
    next_child: int = 0  # children started so far (in element order; at most max_in_flight run)
    failed_items: list[dict[str, Any]] | None = (
        None  # children accepted as failed (max_failed_items)
    )
    recovers: str | None = None  # a fallback's run: the step whose failure it answers
    # The digest of the last reply that failed an attempt: a redelivered copy of it is no
    # second failure (`workflow_manager.engine.redelivery`).
    counted_reply: bytes | None = None
    # Workflows with `compensate` only: the compensations of each child that finished, in the
    # order they finished (a completed child leaves memory; what undoing it needs stays here).
    child_plans: list[list[CompensationRun]] | None = None
    # A task step with `reduce`: its reduction (then `child_results` stays None); a reducer's
    # run (in its job's steps, like a fallback's): the task step it reduces for.
    reduction: Reduction | None = None
    reduces: str | None = None

    @property
    def name(self) -> str:
        """The step's name."""
        return self.spec.name


@dataclass(frozen=True, slots=True)
class ParentLink:
    """Where a child job's result goes: the parent job, its task step, and the element index."""

    job_id: str
    step: str
    index: int


@dataclass(slots=True)
class ForkedFrom:
    """What a forked job was forked from: the source job, the step it ran again from, the
    input that step was given (None: derived as usual) and the steps it kept with the source's
    outputs. For a task step: the source's completed children it may keep, by element index
    (id, payload digest, result), and the indexes of those it kept when it fanned out (None
    once the job has left memory: its snapshot keeps their number, `children_reused`)."""

    source: str
    step: str
    input: dict[str, Any] | None
    reused: tuple[str, ...]
    children: dict[int, tuple[str, str, dict[str, Any] | None]] | None = None
    kept: set[int] | None = None
    children_reused: int = 0


@dataclass(slots=True)
class BulkRun:
    """One bulk action under way: the jobs it acts on, in order, and how far it got.

    `changed` counts the jobs the action changed, `refused` those it did not (with the first
    reasons in `errors`, as (job id, reason)). A finished bulk leaves memory (its journal rows
    answer for it).
    """

    bulk_id: str
    action: str
    job_ids: tuple[str, ...]
    total: int
    at: float
    params: dict[str, Any] | None = None
    filter: dict[str, Any] | None = None
    next: int = 0
    changed: int = 0
    refused: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class CompensationRun:
    """One compensation to run: it undoes `step` of job `job_id` (the job or one of its children).

    `task` names the flow the step is in (None: the workflow's main steps). `status` is the
    compensation's own: waiting, running, retrying, completed or failed.
    """

    job_id: str
    task: str | None
    step: str
    spec: HandlerStep
    policy: StepPolicy
    input: dict[str, Any]
    output: dict[str, Any]
    status: StepStatus = StepStatus.PENDING
    attempt: int = 0
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    dispatched_at: float | None = None
    was: StepStatus = StepStatus.COMPLETED  # the step's status before: it returns if undo fails
    counted_reply: bytes | None = None  # as StepRun's: the last reply that failed an attempt

    @property
    def name(self) -> str:
        """The compensation's name."""
        return self.spec.name

    @property
    def correlation_id(self) -> str:
        """`<job>:<compensation name>`: its requests' correlation id, distinct from the step's."""
        return f"{self.job_id}:{self.spec.name}"


@dataclass(slots=True)
class Compensation:
    """A failed or cancelled job undoing its completed steps, one at a time, newest first.

    `reason` is failed or cancelled, `error` what the compensation workers are told; then the
    `then` branch (on_error / on_cancel) runs with `then_input`.
    """

    runs: list[CompensationRun]
    reason: str
    error: dict[str, Any]
    then: str
    then_input: dict[str, Any]
    current: int = 0

    @property
    def is_done(self) -> bool:
        """True once every compensation has completed or failed for good."""
        return self.current >= len(self.runs)


@dataclass(slots=True)
class Job:
    """A running or finished job: a workflow (or, for a child job, a task) applied to a payload."""

    id: str
    workflow: Workflow
    flow: Flow
    payload: dict[str, Any]
    submitted_at: float
    steps: dict[str, StepRun]
    steps_left: int
    parent: ParentLink | None = None
    status: JobStatus = JobStatus.RUNNING
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    finished_at: float | None = None
    reply_to: list[str] = field(default_factory=list)
    # The on_error / on_cancel steps, once the job has failed or been cancelled: they run in
    # the same job (their StepRuns join `steps`), and the job is settled when none is left.
    branch: str | None = None
    branch_input: dict[str, Any] | None = None
    branch_left: int = 0
    # The top-level job's id, kept when the job is made: every command of a child names it,
    # and walking up the parents for each would cost as much as the rest of the event.
    root_id: str = ""
    # The W3C trace the job is part of (a child's is its top-level job's), and the span its own
    # span hangs from: the submitter's, or for a child its task step's.
    trace_id: str = ""
    trace_parent: str | None = None
    # A delayed start (`x-delay`, `?not_before=`): when the job starts; None for one that
    # started when it was submitted.
    start_at: float | None = None
    # Workflows with `unique`: the key this job holds (canonical JSON of the key's value).
    unique_key: str | None = None
    # Signals for waiting steps not reached yet, by step: each completes its step when reached.
    signals: dict[str, dict[str, Any]] | None = None
    # 0-9, higher first: a child's is its top-level job's. Orders held-back work; rides on requests.
    priority: int = 0
    # The concurrency limits a top-level job counts against (`EngineState.scopes` keys), and
    # since when it has been queued for them.
    scopes: tuple[str, ...] = ()
    queued_at: float | None = None
    # Workflows with `rate` (`workflow_manager.engine.jobrates`): since when the queued job
    # waits for its turn under the workflow's rate, and when its window lets it go at the
    # earliest (None while it waits for none, or its quota is 0).
    throttled_at: float | None = None
    throttled_until: float | None = None
    # Workflows with `fairness`: the key group (and weight) its held-back work waits in; a
    # child's is its top-level job's.
    share: FairShare = NO_SHARE
    # The job's metadata (a top-level job's: its children read it from there), or None.
    meta: dict[str, Any] | None = None
    # A paused top-level job (`workflow_manager.engine.pausing`): the requests of its tree held
    # back, as (job id, step, released by a limit), and its timers that came due meanwhile.
    paused: bool = False
    held: list[tuple[str, str, bool]] | None = None
    held_timers: list[str] | None = None
    # Workflows with `compensate` only: main steps in the order they completed, and, once the
    # job failed or was cancelled with completed steps to undo, its compensations.
    done_order: list[str] | None = None
    compensation: Compensation | None = None
    # Partitioned: the partition the top-level job was placed in at submission (a child's is
    # its top-level job's); None when unpartitioned, or for a job placed by its id long ago.
    partition: int | None = None
    # A fork of another job (`workflow_manager.engine.forking`): what it came from.
    fork: ForkedFrom | None = None
    # Workflows with `debounce`: the key of the window this top-level job was made for.
    debounce_key: str | None = None

    @property
    def is_running(self) -> bool:
        """True until the job completes, fails or is cancelled."""
        return self.status is JobStatus.RUNNING

    @property
    def is_settled(self) -> bool:
        """True once the job has ended, its compensations and on_error / on_cancel steps done."""
        return (
            self.status in ENDED_STATUSES
            and self.branch_left == 0
            and (self.compensation is None or self.compensation.is_done)
        )

    def is_live(self, step: str) -> bool:
        """True while `step` may still run: the job runs, or the step is in its running branch."""
        return self.is_running or (self.branch_left > 0 and step not in self.flow.step_index)

    def flow_of(self, step: str) -> Flow:
        """The flow a step of this job belongs to: the job's own, or its running branch."""
        if step in self.flow.step_index or self.branch is None:
            return self.flow
        return self.workflow.branches[self.branch]

    def __repr__(self) -> str:
        done = len(self.steps) - self.steps_left
        return f"<Job {self.id[:8]} {self.flow.name} {self.status} {done}/{len(self.steps)} steps>"


@dataclass(slots=True)
class EngineState:
    """All jobs by id, and every workflow definition a job may be pinned to (by content hash)."""

    definitions: dict[str, Workflow]
    current: dict[str, str]
    jobs: dict[str, Job] = field(default_factory=dict)
    timers: dict[str, float] = field(default_factory=dict)  # key -> due (unix seconds)
    # Completed children dropped from memory (their parent keeps the result, the journal their
    # row), id -> top-level job id, until their top-level job leaves memory: a new job may not
    # take one of these ids (`workflow_manager.engine.goneids`).
    gone: GoneIds = field(default_factory=GoneIds)
    # Workflows with `unique`: (workflow name, key) -> the unfinished job that holds the key.
    unique: dict[tuple[str, str], str] = field(default_factory=dict)
    # Concurrency limits: of top-level jobs, by scope (`workflow_manager.engine.admission`), and of
    # steps' outstanding requests, by step (`workflow_manager.engine.gates`); created on first use.
    scopes: dict[str, Slots] = field(default_factory=dict)
    gates: dict[str, Slots] = field(default_factory=dict)
    max_running_jobs: int | None = None  # all top-level jobs together (serve --max-running-jobs)
    # Nested limits (`limits:` of the workflow file), in file order (`engine.admission`).
    limits: tuple[JobLimit, ...] = ()
    # The most bytes of input a fan-out may copy into its children (serve --max-fanout-bytes).
    max_fanout_bytes: int = DEFAULT_MAX_FANOUT_BYTES
    # `<workflow>/<schedule>` -> the id of the latest job that schedule started (overlap rule).
    schedule_runs: dict[str, str] = field(default_factory=dict)
    # `<workflow>/<schedule>` of each paused schedule: its firings start no job.
    schedules_paused: set[str] = field(default_factory=set)
    # `<workflow>/<schedule>` -> since when it exists (the first start that served it).
    schedules_since: dict[str, float] = field(default_factory=dict)
    # The paused top-level jobs: checked first (empty: nothing is paused, nothing more to do).
    paused: set[str] = field(default_factory=set)
    # The correlation id of each compensation in flight -> the job compensating: its reply may
    # name a completed child that has left memory.
    compensating: dict[str, str] = field(default_factory=dict)
    # The bulk actions under way, by id (`workflow_manager.engine.bulk`).
    bulks: dict[str, BulkRun] = field(default_factory=dict)
    # Workflows with `debounce`: workflow name -> key -> its open window, oldest first.
    debounce: dict[str, dict[str, DebounceWindow]] = field(default_factory=dict)
    # Rate limits (`workflow_manager.engine.rates`): bucket name -> its recent starts and the
    # work waiting for a turn, least recently used first; an idle one leaves memory.
    rates: dict[str, RateWindow] = field(default_factory=dict)
    # Several managers: each partition's quota of the limits that hold across the cluster
    # (`workflow_manager.engine.quotas`); None with one manager, where limits are used whole.
    quotas: Quotas | None = None

    @classmethod
    def from_workflows(
        cls,
        workflows: Mapping[str, Workflow],
        pinned: Iterable[Workflow] = (),
        max_running_jobs: int | None = None,
        max_fanout_bytes: int = DEFAULT_MAX_FANOUT_BYTES,
        limits: Iterable[JobLimit] = (),
        partitions: int | None = None,
    ) -> EngineState:
        """A fresh state serving `workflows`; `pinned` adds older versions running jobs use;
        `partitions`: the count, when several managers share the jobs (limits by quota)."""
        definitions = {wf.content_hash: wf for wf in pinned}
        definitions.update({wf.content_hash: wf for wf in workflows.values()})
        current = {name: wf.content_hash for name, wf in workflows.items()}
        return cls(
            definitions=definitions,
            current=current,
            max_running_jobs=max_running_jobs,
            max_fanout_bytes=max_fanout_bytes,
            limits=tuple(limits),
            quotas=Quotas(partitions) if partitions is not None else None,
        )

    def workflow(self, name: str, definition: str | None = None) -> Workflow | None:
        """The definition a job of `name` runs: the pinned hash if given, else the current one."""
        key = definition if definition is not None else self.current.get(name)
        wf = self.definitions.get(key) if key is not None else None
        return wf if wf is not None and wf.name == name else None
