"""Pydantic models of the HTTP API's responses, for validation and the OpenAPI docs.

Paths and field names follow the older Go tool's API (hence `startTime` and `job_count`
side by side); fields marked "extra" are additions it did not have.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from workflow_manager.api.fanin import JoinProgress, ReduceProgress

__all__ = [
    "Attempt",
    "ChildCounts",
    "ChildEntry",
    "ChildPage",
    "CompensationEntry",
    "Compensations",
    "ErrorBody",
    "DuplicateBody",
    "Health",
    "JobDetail",
    "JobIds",
    "JobList",
    "JobListEntry",
    "JobPage",
    "Overview",
    "StepDefinition",
    "StepView",
    "WorkflowDefinition",
    "WorkflowStats",
    "Progress",
    "StepEntry",
    "SubmitResponse",
    "WorkflowJobs",
    "WorkflowSummary",
]


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: one sentence saying what was wrong and how to fix it."""

    error: str = Field(examples=["no job 3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"])


class DuplicateBody(ErrorBody):
    """409 for a submission: the job id is taken, or (with `job`) an unfinished job of the
    workflow has the same unique key."""

    job: str | None = Field(
        default=None, description="The unfinished job that has the unique key, if that is why."
    )


class WorkflowSummary(BaseModel):
    """One workflow (one entry per vhost when it lists vhosts) and its running top-level jobs."""

    vhost: str = Field(description='The vhost, or "" when the workflow lists none.')
    name: str
    job_count: int = Field(description="Top-level jobs of this workflow now running.")


class FairShareView(BaseModel):
    """The fairness key a job's waiting work takes turns under, and its weight."""

    key: str = Field(examples=['"tenant-b"'])
    weight: float = Field(examples=[1.0])


class WaitingForView(BaseModel):
    """The limit a queued job waits under: the first of its limits that is full."""

    kind: Literal["concurrency", "limit", "max_running_jobs", "rate"] = Field(
        description=(
            "`concurrency`: its workflow's; `limit`: an entry of the file's `limits:`; "
            "`max_running_jobs`: the manager's --max-running-jobs; `rate`: its workflow's "
            "`rate` (after its concurrency limits: it holds their slots)."
        )
    )
    limit: str = Field(
        description="The `limits:` entry's name (or `concurrency`, `max_running_jobs`, `rate`).",
        examples=["per-tenant"],
    )
    key: str | None = Field(
        default=None, description="A keyed limit: the job's key (JSON).", examples=['"acme"']
    )
    running: int = Field(
        description="Jobs holding its slots now (started, or starting); for `rate`, the jobs "
        "started in its window."
    )
    of: int = Field(description="The limit.")
    until: str | None = Field(
        default=None,
        description="`rate` only: when its turn may come at the earliest (later when others "
        "wait before it; absent while a partition's quota of it is 0).",
    )


class SubmitResponse(BaseModel):
    """The id of the job just started (or scheduled, or queued); with `status` `debounced`,
    the id of the job whose debounce window the trigger joined."""

    id: str = Field(examples=["3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"])
    status: Literal["debounced"] | None = Field(
        default=None,
        description=(
            "`debounced` when the workflow's `debounce` window for the trigger's key was open: "
            "no job of its own started, job `id` does the work (in trailing mode with this "
            "trigger's payload, if no later one comes). Absent otherwise."
        ),
    )


class WorkflowJobs(BaseModel):
    """Top-level jobs of one workflow: running ones, and those that finished within the interval."""

    running: list[str]
    queued: list[str] = Field(
        default_factory=list, description="Extra: waiting under a concurrency limit."
    )
    scheduled: list[str] = Field(
        default_factory=list,
        description="Extra: made with a delayed start (delay, not_before), waiting for it.",
    )
    completed: list[str] = Field(description="Finished with status completed.")
    failed: list[str] = Field(description="Extra: finished with status failed or cancelled.")


class JobIds(BaseModel):
    """Ids of every running job, child jobs included."""

    jobs: list[str]


class StepEntry(BaseModel):
    """One step of a job, or one of the pseudo-steps `__start__` and `__end__`."""

    name: str
    startTime: str = Field(description="ISO-8601 UTC, e.g. 2024-05-01T12:00:00.000Z.")
    elapsed: float = Field(description="Seconds: to now while running, else to when it ended.")
    tasks: list[str] | None = Field(
        default=None, description="Task steps that have fanned out: the child job ids."
    )
    tasks_done: int | None = Field(default=None, description="Extra: running task steps only.")
    tasks_total: int | None = Field(default=None, description="Extra: running task steps only.")
    tasks_needed: int | None = Field(
        default=None,
        description="Extra: running task steps with a join (min_success, first) only: the "
        "children that must succeed for the step to complete.",
    )
    join: JoinProgress | None = Field(
        default=None, description="Extra: task steps with a join (min_success, first)."
    )
    reduce: ReduceProgress | None = Field(
        default=None, description="Extra: task steps with `reduce`."
    )
    message: dict[str, Any] | str | None = Field(
        default=None,
        description="Output of a completed step, error text of a failed one; the payload "
        "for __start__, the result for __end__.",
    )
    attempt: int | None = Field(default=None, description="Extra: the attempt, when past 1.")
    retrying: bool | None = Field(
        default=None, description="Extra: an attempt failed and the retry wait is running."
    )
    lastError: str | None = Field(default=None, description="Extra: why the last attempt failed.")
    branch: str | None = Field(
        default=None, description="Extra: on_error or on_cancel, for the steps of a branch."
    )
    skipped: bool | None = Field(
        default=None, description="Extra: the step's `when` was false; it sent no request."
    )
    recovered: bool | None = Field(
        default=None, description="Extra: the step failed and its fallback's output is its own."
    )
    compensation: Literal["compensating", "compensated"] | None = Field(
        default=None,
        description="Extra: the step completed, then its job failed or was cancelled and its "
        "`compensate` step is undoing it (compensating) or has (compensated).",
    )


class CompensationEntry(BaseModel):
    """One compensation of a failed or cancelled job: the step it undoes, and how it went."""

    job: str = Field(description="The job whose step it undoes: this job or one of its children.")
    step: str
    name: str = Field(description="The compensation's name: its requests carry <job>:<name>.")
    queue: str
    status: Literal["pending", "running", "retrying", "compensated", "failed"] = Field(
        description="failed: it still failed after its retries (the others went on)."
    )
    attempts: int
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


class Compensations(BaseModel):
    """Extra: a failed or cancelled job undoing its completed steps, newest first."""

    reason: Literal["failed", "cancelled"]
    runs: list[CompensationEntry] = Field(description="In the order they run (LIFO).")


class Progress(BaseModel):
    """Extra: how far a job has got, for progress lines."""

    steps_done: int = Field(description="Steps completed.")
    steps_total: int
    children_done: int = Field(description="Child jobs finished, over the task steps fanned out.")
    children_total: int


JobStatusName = Literal[
    "scheduled", "queued", "running", "paused", "completed", "failed", "cancelled"
]


class ForkedFrom(BaseModel):
    """What a forked job came from."""

    job: str = Field(description="The source job's id.")
    step: str = Field(description="The step the fork ran again from.")
    input: dict[str, Any] | None = Field(
        default=None, description="The input the fork gave that step, if it gave one."
    )
    reused: list[str] = Field(description="The steps it kept with the source's outputs.")
    children_reused: int = Field(
        default=0, description="For a task step: the source's completed children it kept."
    )


class ForkEntry(BaseModel):
    """One fork of a job."""

    id: str = Field(description="The fork's id.")
    step: str = Field(description="The step it ran again from.")
    at: str = Field(description="When it was forked (RFC 3339, UTC).")


class JobDetail(BaseModel):
    """A job or child job: its steps by state, and its result or error once it has ended."""

    uuid: str
    workflow: str = Field(description="The top-level workflow's name, for child jobs too.")
    task: str | None = Field(default=None, description="Extra, child jobs only: the task's name.")
    parent: str | None = Field(default=None, description="Extra, child jobs only: the parent id.")
    status: JobStatusName = Field(
        description="paused: a running job that was paused (nothing new goes out until resumed)."
    )
    queued_at: str | None = Field(
        default=None, description="Extra, while queued: when it entered its concurrency queue."
    )
    waiting_for: WaitingForView | None = Field(
        default=None, description="Extra, while queued: the limit it waits under."
    )
    start_at: str | None = Field(
        default=None,
        description="Extra, delayed starts only: when the job starts (scheduled) or started.",
    )
    running: list[StepEntry]
    completed: list[StepEntry] = Field(
        description="Starts with __start__; ends with __end__ once the job has completed."
    )
    failed: list[StepEntry] = Field(description="Extra: steps that failed.")
    waiting: list[StepEntry] | None = Field(
        default=None,
        description="Extra: steps waiting for a signal (wait: true); `startTime` is when the "
        "step began to wait.",
    )
    progress: Progress
    trace_id: str = Field(
        description="Extra: the W3C trace id (32 hex digits) of the job, its children's too."
    )
    priority: int = Field(
        default=0, description="Extra: 0-9, higher first (a child's is its top-level job's)."
    )
    meta: dict[str, Any] | None = Field(
        default=None,
        description="Extra, top-level jobs: the job's metadata (x-meta) with every reply's "
        "x-meta-patch merged in; its requests and its children's carry it.",
    )
    result: dict[str, Any] | None = Field(default=None, description="Once completed.")
    error: dict[str, Any] | None = Field(
        default=None, description='Once failed or cancelled: {"step": ..., "message": ...}.'
    )
    compensations: Compensations | None = Field(
        default=None, description="Extra: once the job started undoing its completed steps."
    )
    forked_from: ForkedFrom | None = Field(
        default=None, description="Extra, forks only: the job it was forked from."
    )
    forks: list[ForkEntry] | None = Field(
        default=None, description="Extra: the jobs forked from this one, oldest first."
    )


class Health(BaseModel):
    """Whether the manager is connected to RabbitMQ; `since`: seconds it has been disconnected."""

    status: Literal["ok", "disconnected"]
    since: float | None = Field(default=None, description="Seconds since the connection was lost.")


class Readiness(BaseModel):
    """Whether the manager can take work now, and if not, why."""

    status: Literal["ready", "not-ready"]
    reasons: list[str] = Field(default_factory=list)


# -- browsing (the web UI's reads) ---------------------------------------------------------

StepStatusName = Literal[
    "pending",
    "queued",
    "throttled",
    "waiting",
    "running",
    "retrying",
    "completed",
    "failed",
    "cancelled",
    "skipped",
    "recovered",
    "compensating",
    "compensated",
]
ChildStatusName = Literal["pending", "running", "completed", "failed", "cancelled"]
_START_AT_DOC = "Delayed starts only: when the job starts (while scheduled) or started."


class Attempt(BaseModel):
    """One request of a step and what came of it."""

    attempt: int
    dispatched_at: str
    finished_at: str | None = None
    elapsed: float = Field(description="Seconds: to now while running, else to the end.")
    outcome: Literal["running", "completed", "failed", "timeout"]
    error: str | None = None


class ChildCounts(BaseModel):
    """A task step's child jobs by status."""

    total: int
    pending: int = Field(description="Not started yet (max_in_flight), or never started.")
    running: int
    completed: int
    failed: int
    cancelled: int


class StepView(BaseModel):
    """One step of a job as the job page shows it; branch steps have kind on_error/on_cancel."""

    name: str
    kind: Literal["step", "task", "on_error", "on_cancel", "fallback"]
    depends: list[str]
    queue: str | None = None
    http: str | None = Field(default=None, description="The URL of an HTTP step.")
    fallback: str | None = Field(default=None, description="The name of the step's fallback.")
    recovers: str | None = Field(
        default=None, description="A fallback's: the step whose failure it answers (its depends)."
    )
    input_schema: str | None = Field(
        default=None, description="Where the step's input_schema is written: its file, or inline."
    )
    output_schema: str | None = Field(
        default=None, description="Where the step's output_schema is written: its file, or inline."
    )
    status: StepStatusName = Field(
        description="cancelled: in flight when its job ended (a late reply is dropped); "
        "skipped: its `when` was false (no request, output {}); recovered: it failed and its "
        "fallback's output became its own (its error is kept); compensating / compensated: "
        "it completed, then its job failed or was cancelled and its compensation undoes it; "
        "waiting: a `wait: true` step waiting for its signal; queued: waiting for a slot "
        "under its `concurrency`; throttled: waiting for its turn under its `rate`."
    )
    wait: bool | None = Field(default=None, description="True for a step that waits for a signal.")
    waiting_since: str | None = Field(
        default=None, description="While waiting: when the step began to wait for its signal."
    )
    throttled_until: str | None = Field(
        default=None,
        description="While throttled: when its rate's window lets it go at the earliest "
        "(later when others wait before it).",
    )
    compensate: str | None = Field(
        default=None, description="The name of the step's compensation, if it has one."
    )
    when: str | None = Field(default=None, description="The step's condition, if it has one.")
    attempts: int = Field(description="Requests sent so far (0 before the first).")
    started_at: str | None = None
    finished_at: str | None = None
    elapsed: float | None = None
    input: Any = Field(default=None, description="The request body of the latest attempt.")
    output: dict[str, Any] | None = None
    error: str | None = None
    children: ChildCounts | None = Field(default=None, description="Task steps that fanned out.")
    join: JoinProgress | None = Field(
        default=None, description="Task steps with a join (min_success, first) that fanned out."
    )
    reduce: ReduceProgress | None = Field(
        default=None, description="Task steps with `reduce` that fanned out."
    )
    history: list[Attempt] = Field(description="Each attempt, oldest first.")


class JobPage(BaseModel):
    """A job with every step of its definition, each step's attempts and children's progress."""

    uuid: str
    workflow: str
    task: str | None = None
    parent: str | None = None
    parent_step: str | None = None
    index: int | None = Field(default=None, description="A child's element index in its list.")
    root: str = Field(description="The top-level job's id (the job's own, for a top-level job).")
    status: JobStatusName
    submitted_at: str
    queued_at: str | None = Field(
        default=None, description="While queued: when the job entered its concurrency queue."
    )
    start_at: str | None = Field(default=None, description=_START_AT_DOC)
    unique_key: str | None = Field(
        default=None,
        description="Workflows with `unique` only: the job's key (JSON), held until it ends.",
    )
    debounce_key: str | None = Field(
        default=None,
        description=(
            "Workflows with `debounce` only, while the job is in memory: the key (JSON) of the "
            "debounce window it was made for (triggers with this key until the window closes "
            "join it)."
        ),
    )
    waiting_for: WaitingForView | None = Field(
        default=None,
        description=(
            "A queued job only: the limit it waits under (the first full one of its "
            "workflow's `concurrency`, the file's `limits:` in order, --max-running-jobs, "
            "then its workflow's `rate`)."
        ),
    )
    fair_share: FairShareView | None = Field(
        default=None,
        description=(
            "Workflows with `fairness` only, while the job is in memory: the key (JSON) its "
            "waiting work takes turns under, and its weight (turns per round)."
        ),
    )
    finished_at: str | None = None
    elapsed: float
    payload: dict[str, Any]
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    trace_id: str | None = None
    priority: int = Field(default=0, description="0-9, higher first; children inherit it.")
    meta: dict[str, Any] | None = Field(
        default=None,
        description="Top-level jobs: the job's metadata (x-meta, patches merged in).",
    )
    definition: str = Field(description="The content hash of the definition the job runs.")
    branch: Literal["on_error", "on_cancel"] | None = None
    branch_running: bool = Field(
        default=False, description="True while steps of its `branch` are still to run."
    )
    can_cancel: bool
    can_retry: bool
    can_pause: bool = Field(default=False, description="A running top-level job, not paused.")
    can_resume: bool = Field(default=False, description="A paused top-level job.")
    can_fork: bool = Field(
        default=False, description="A top-level job that has ended (its branch steps too)."
    )
    steps: list[StepView]
    compensations: Compensations | None = Field(
        default=None, description="Once the job started undoing its completed steps."
    )
    forked_from: ForkedFrom | None = Field(
        default=None, description="Forks only: the job it was forked from."
    )
    forks: list[ForkEntry] | None = Field(
        default=None, description="The jobs forked from this one, oldest first."
    )


class ChildEntry(BaseModel):
    """One child job of a task step."""

    uuid: str
    task: str
    step: str = Field(description="The task step that fanned it out.")
    index: int = Field(description="Its element's index in the list.")
    status: ChildStatusName
    submitted_at: str | None = None
    finished_at: str | None = None
    elapsed: float | None = None
    error: dict[str, Any] | None = None


class ChildPage(BaseModel):
    """A page of a job's children in element order, and the counts of all of them."""

    total: int = Field(description="Children matching the filter.")
    offset: int
    limit: int
    counts: dict[ChildStatusName, int]
    children: list[ChildEntry]


class JobListEntry(BaseModel):
    """A top-level job in a list."""

    uuid: str
    workflow: str
    status: JobStatusName
    submitted_at: str
    start_at: str | None = Field(default=None, description=_START_AT_DOC)
    finished_at: str | None = None
    elapsed: float


class JobList(BaseModel):
    """Top-level jobs, newest first; `next_before` fetches the next page (null at the end)."""

    jobs: list[JobListEntry]
    next_before: float | None


class WorkflowStats(BaseModel):
    """A workflow's jobs: running now, and finished since the overview's `since`."""

    name: str
    running: int
    completed: int
    failed: int
    cancelled: int
    median_seconds: float | None = Field(description="Median duration of the completed ones.")


class Overview(BaseModel):
    """Every workflow's recent activity."""

    since: str
    workflows: list[WorkflowStats]


class StepDefinition(BaseModel):
    """A step of a definition with its effective policy."""

    name: str
    kind: Literal["step", "task", "on_error", "on_cancel"]
    depends: list[str]
    queue: str | None = None
    http: str | None = None
    wait: bool | None = Field(default=None, description="True for a step that waits for a signal.")
    retries: int
    timeout: float | None = None
    retry_backoff: dict[str, float]
    when: str | None = Field(default=None, description="The step's condition, if it has one.")
    fallback: dict[str, Any] | None = Field(
        default=None, description="The step's fallback: name, queue and effective policy."
    )
    input_schema: dict[str, Any] | None = Field(
        default=None, description="The JSON Schema its input must match (inline or from file)."
    )
    output_schema: dict[str, Any] | None = Field(
        default=None, description="The JSON Schema each reply must match (inline or from file)."
    )
    compensate: dict[str, Any] | None = Field(
        default=None, description="The step's compensation: its name, queue and policy."
    )
    task: dict[str, Any] | None = Field(
        default=None, description="For a task step: the task's settings and its own steps."
    )


class WorkflowDefinition(BaseModel):
    """A workflow as loaded: its steps, content hash and YAML."""

    name: str
    hash: str
    timeout: float | None = None
    vhosts: list[str]
    payload_schema: dict[str, Any] | None = Field(
        default=None,
        description="The JSON Schema a payload must match: `document`, and `file` if from a file.",
    )
    steps: list[StepDefinition]
    yaml: str
