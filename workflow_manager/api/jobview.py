"""The job page's body: every step of a job with its status, attempts and children's progress.

Pure: the engine's job, the job's own journal rows (for each attempt's times and errors) and
its children's statuses come in; the step a job never reached is `pending`, and a step that was
in flight when its job ended is `cancelled` (its late reply is dropped).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workflow_manager.api.compensations import compensation_view
from workflow_manager.api.views import shown_status
from workflow_manager.config.models import Step
from workflow_manager.config.schemas import JsonSchema
from workflow_manager.engine import EngineState, Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.admission import waiting_for
from workflow_manager.engine.fairness import NO_SHARE
from workflow_manager.engine.replies import ReplyError, decode_output
from workflow_manager.engine.snapshot import forked_from_json
from workflow_manager.fanin import join_view, reduce_view
from workflow_manager.journal import EventKind, EventRow
from workflow_manager.textline import iso_utc

__all__ = [
    "CHILD_STATUSES",
    "job_page",
    "child_status",
    "attempt_history",
    "step_route",
    "waiting_body",
]

_CANCELLABLE = (JobStatus.SCHEDULED, JobStatus.QUEUED, JobStatus.RUNNING)
_UNFINISHED_STEP = (
    StepStatus.RUNNING, StepStatus.RETRYING, StepStatus.WAITING, StepStatus.QUEUED,
    StepStatus.THROTTLED,
)  # fmt: skip

CHILD_STATUSES = ("pending", "running", "completed", "failed", "cancelled")
_STEP_STATUS = {
    StepStatus.PENDING: "pending",
    StepStatus.WAITING: "waiting",
    StepStatus.QUEUED: "queued",
    StepStatus.THROTTLED: "throttled",
    StepStatus.RUNNING: "running",
    StepStatus.RETRYING: "retrying",
    StepStatus.COMPLETED: "completed",
    StepStatus.FAILED: "failed",
    StepStatus.SKIPPED: "skipped",
    StepStatus.RECOVERED: "recovered",
    StepStatus.COMPENSATING: "compensating",
    StepStatus.COMPENSATED: "compensated",
}


def _seconds(start: float, end: float) -> float:
    return round(max(0.0, end - start), 3)


@dataclass(slots=True)
class _Attempt:
    attempt: int
    dispatched_at: float
    finished_at: float | None = None
    outcome: str = "running"
    error: str | None = None

    def body(self, now: float) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "attempt": self.attempt,
            "dispatched_at": iso_utc(self.dispatched_at),
            "outcome": self.outcome,
        }
        if self.finished_at is not None:
            entry["finished_at"] = iso_utc(self.finished_at)
        entry["elapsed"] = _seconds(self.dispatched_at, self.finished_at or now)
        if self.error is not None:
            entry["error"] = self.error
        return entry


@dataclass(slots=True)
class _StepHistory:
    attempts: list[_Attempt] = field(default_factory=list)
    input: bytes | None = None

    def latest(self, attempt: int | None) -> _Attempt | None:
        """The open attempt a reply or timeout belongs to (the latest, when it names none)."""
        for entry in reversed(self.attempts):
            if attempt is None or entry.attempt == attempt:
                return entry if entry.finished_at is None else None
        return None


def _reply_error(row: EventRow, schema: JsonSchema | None) -> str | None:
    if row.meta.get("error") is not None:
        return str(row.meta["error"])
    try:
        output = decode_output(row.body or b"")
    except ReplyError as exc:
        return f"invalid reply: {exc}"
    problem = schema.violations(output) if schema is not None else None
    return f"output does not match its output_schema: {problem}" if problem else None


def attempt_history(
    rows: Iterable[EventRow], output_schemas: Mapping[str, JsonSchema] | None = None
) -> dict[str, _StepHistory]:
    """Each step's attempts (sent, answered or timed out) from a job's journal rows, in order;
    a reply that failed its step's `output_schema` (by step name) counts as failed."""
    schemas = output_schemas or {}
    steps: dict[str, _StepHistory] = {}
    for row in rows:
        if row.step is None:
            continue
        history = steps.setdefault(row.step, _StepHistory())
        if row.kind == EventKind.DISPATCHED:
            history.attempts.append(_Attempt(row.attempt or 1, row.at))
            history.input = row.body
        elif row.kind == EventKind.REPLIED and (open_ := history.latest(row.attempt)):
            open_.finished_at = row.at
            open_.error = _reply_error(row, schemas.get(row.step))
            open_.outcome = "completed" if open_.error is None else "failed"
        elif row.kind == EventKind.TIMER and str(row.meta.get("key", "")).startswith("timeout:"):
            if open_ := history.latest(row.attempt):
                open_.finished_at, open_.outcome = row.at, "timeout"
                open_.error = "no reply before the step's timeout"
    return steps


def child_status(child_id: str, position: int, started: int, live: Mapping[str, Job],
                 ended: Mapping[str, str]) -> str:  # fmt: skip
    """A child's status: running in memory, its journal row's, or pending if not started yet."""
    if (job := live.get(child_id)) is not None:
        return str(job.status)
    if (status := ended.get(child_id)) is not None:
        return status
    # Started but neither in memory nor committed: it ended a moment ago.
    return "running" if position < started else "pending"


def _children(job: Job, run: StepRun, context: _Context) -> dict[str, int]:
    ids: Sequence[str] = run.children or ()
    # A job read back from the journal has ended: a child with no row there never started.
    started = run.next_child if job.id in context.live else 0
    live, ended = context.live, context.ended
    counts = Counter(child_status(child, i, started, live, ended) for i, child in enumerate(ids))
    body = {"total": len(ids), **{status: counts[status] for status in CHILD_STATUSES}}
    join = run.spec.join
    if join is not None and join.policy != "all":
        body["needed"] = join.needed(len(ids))  # min_success, first: successes it completes at
    return body


def _kind(job: Job, spec: Step) -> str:
    if spec.name not in job.flow.step_index:
        branches = job.workflow.branches.items()
        return next((name for name, flow in branches if spec in flow.steps), "fallback")
    return "task" if spec.task else "step"


def _status(job: Job, run: StepRun | None) -> str:
    if run is None:
        return "pending"
    ended = job.status is not JobStatus.RUNNING and not job.is_live(run.name)
    if ended and run.status in _UNFINISHED_STEP:
        return "cancelled"
    return _STEP_STATUS[run.status]


def step_route(spec: Step) -> dict[str, Any]:
    """Where a step's work goes: `http` (its URL), `wait` (a signal) or `queue`; a task step's
    goes to child jobs (nothing here)."""
    if spec.http is not None:
        return {"http": spec.http.url}
    if spec.wait:
        return {"wait": True}
    return {} if spec.task else {"queue": spec.queue_name}


def _shape(spec: Step) -> dict[str, str]:
    """What the step's definition adds to its run: `when`, fallback, compensation, schemas."""
    shape: dict[str, str | None] = {"when": spec.when}
    shape["fallback"] = spec.fallback.name if spec.fallback is not None else None
    shape["compensate"] = spec.compensate.name if spec.compensate is not None else None
    shape["input_schema"] = spec.input_schema.source if spec.input_schema is not None else None
    shape["output_schema"] = spec.output_schema.source if spec.output_schema is not None else None
    return {key: value for key, value in shape.items() if value is not None}


def _step(job: Job, spec: Step, context: _Context) -> dict[str, Any]:
    run = job.steps.get(spec.name)
    history = context.history.get(spec.name, _StepHistory())
    entry: dict[str, Any] = {"name": spec.name, "kind": _kind(job, spec), "depends": spec.depends}
    entry.update(_shape(spec))
    entry.update(step_route(spec))
    entry["status"] = _status(job, run)
    if entry["status"] == "waiting" and run is not None and run.started_at is not None:
        entry["waiting_since"] = iso_utc(run.started_at)
    if entry["status"] == "throttled" and run is not None and run.throttled_until is not None:
        entry["throttled_until"] = iso_utc(run.throttled_until)
    entry["attempts"] = run.attempt if run is not None else 0
    if run is not None and run.started_at is not None:
        end = next(t for t in (run.finished_at, job.finished_at, context.now) if t is not None)
        entry["started_at"] = iso_utc(run.started_at)
        if run.finished_at is not None:
            entry["finished_at"] = iso_utc(run.finished_at)
        entry["elapsed"] = _seconds(run.started_at, end)
    if run is not None and run.input is not None:
        entry["input"] = run.input
    elif history.input is not None:
        entry["input"] = _json(history.input)
    if run is not None and run.output is not None:
        entry["output"] = run.output
    if run is not None and run.error is not None:
        entry["error"] = run.error
    if run is not None and run.children is not None:
        entry["children"] = _children(job, run, context)
        if (join := join_view(run)) is not None:
            entry["join"] = join
        if (reduction := _reduction(run, context)) is not None:
            entry["reduce"] = reduction
    entry["history"] = [attempt.body(context.now) for attempt in history.attempts]
    return entry


def _reduction(run: StepRun, context: _Context) -> dict[str, Any] | None:
    """A reduce step's progress; once it ended, counted from its reducer's attempts: one
    completed attempt per batch, every batch but the last full, the last one's results in the
    reducer's latest request."""
    reduce = run.spec.reduce
    if reduce is None or run.reduction is not None:
        return reduce_view(run)
    history = context.history.get(reduce.step, _StepHistory())
    batches = sum(attempt.outcome == "completed" for attempt in history.attempts)
    reduced = batches * reduce.batch
    if run.status.is_done and batches and history.input is not None:
        last = _json(history.input)
        results = last.get("results") if isinstance(last, dict) else None
        if isinstance(results, list):
            reduced = (batches - 1) * reduce.batch + len(results)
    return reduce_view(run, reduced=min(reduced, len(run.children or ())), batches=batches)


def _json(body: bytes) -> Any:
    try:
        return decode_output(body)
    except ReplyError:
        return body.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class _Context:
    history: dict[str, _StepHistory]
    live: Mapping[str, Job]
    ended: Mapping[str, str]
    now: float


def _keys(job: Job) -> dict[str, Any]:
    """The keys the job was placed under by its workflow's rules (unique, debounce, fairness)."""
    keys: dict[str, Any] = {}
    if job.unique_key is not None:
        keys["unique_key"] = job.unique_key
    if job.debounce_key is not None:
        keys["debounce_key"] = job.debounce_key
    if job.share is not NO_SHARE:
        keys["fair_share"] = {"key": job.share.group, "weight": job.share.weight}
    return keys


def _header(job: Job, now: float) -> dict[str, Any]:
    body: dict[str, Any] = {"uuid": job.id, "workflow": job.workflow.name}
    if job.parent is not None:
        body["task"] = job.flow.name
        body["parent"] = job.parent.job_id
        body["parent_step"] = job.parent.step
        body["index"] = job.parent.index
    body["root"] = job.root_id or job.id
    body["status"] = shown_status(job)
    body["submitted_at"] = iso_utc(job.submitted_at)
    if job.queued_at is not None and job.status is JobStatus.QUEUED:
        body["queued_at"] = iso_utc(job.queued_at)
    if job.start_at is not None:
        body["start_at"] = iso_utc(job.start_at)
    body.update(_keys(job))
    if job.finished_at is not None:
        body["finished_at"] = iso_utc(job.finished_at)
    body["elapsed"] = _seconds(job.submitted_at, job.finished_at or now)
    body["payload"] = job.payload
    if job.result is not None:
        body["result"] = job.result
    if job.error is not None:
        body["error"] = job.error
    if (trace_id := getattr(job, "trace_id", None)) is not None:
        body["trace_id"] = trace_id
    body["priority"] = job.priority
    if job.meta is not None:
        body["meta"] = job.meta
    body["definition"] = job.workflow.content_hash
    body["branch"] = job.branch
    # Its steps may all have run: the job says "now running" only while some are left.
    body["branch_running"] = job.branch is not None and getattr(job, "branch_left", 0) > 0
    top_level = job.parent is None
    body["can_cancel"] = top_level and job.status in _CANCELLABLE
    paused = bool(getattr(job, "paused", False))
    body["can_pause"] = top_level and job.status is JobStatus.RUNNING and not paused
    body["can_resume"] = top_level and paused
    body["can_retry"] = (
        top_level
        and job.status in (JobStatus.FAILED, JobStatus.CANCELLED)
        and job.compensation is None  # a retry would build on undone work
    )
    body["can_fork"] = top_level and job.is_settled
    if job.fork is not None:
        body["forked_from"] = forked_from_json(job.fork)
    return body


def waiting_body(state: EngineState, job: Job) -> dict[str, Any] | None:
    """`waiting_for`: the limit queued `job` waits under (None: it does not wait, or it is not
    this manager's job in memory)."""
    if state.jobs.get(job.id) is not job:
        return None
    waiting = waiting_for(state, job)
    if waiting is None:
        return None
    body = {name: value for name, value in asdict(waiting).items() if value is not None}
    if waiting.until is not None:
        body["until"] = iso_utc(waiting.until)  # a workflow's rate: when its turn may come
    return body


def job_page(
    job: Job,
    rows: Iterable[EventRow],
    live: Mapping[str, Job],
    ended: Mapping[str, str],
    now: float,
    waiting: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The job page's body: header, then every step (branch steps last) with its attempts.

    `rows` are the job's own journal rows; `live` the jobs in memory and `ended` the status of
    each of its children that has ended, for task steps' progress; `waiting` the limit a queued
    job waits under (`waiting_body`).
    """
    schemas = {s.name: s.output_schema for s in job.flow.steps if s.output_schema is not None}
    context = _Context(attempt_history(rows, schemas), live, ended, now)
    specs = [*job.flow.steps]
    recovers = {}
    for spec in job.flow.steps:
        if spec.fallback_step is not None:
            specs.append(spec.fallback_step)
            recovers[spec.fallback_step.name] = spec.name
    if job.parent is None:
        for flow in job.workflow.branches.values():
            specs += flow.steps
    body = _header(job, now)
    if waiting is not None:
        body["waiting_for"] = waiting
    body["steps"] = [_step(job, spec, context) for spec in specs]
    for entry in body["steps"]:
        if entry["name"] in recovers:
            # Drawn after the step it recovers; it runs only if that step fails for good.
            entry["recovers"] = recovers[entry["name"]]
            entry["depends"] = [recovers[entry["name"]]]
    if (compensations := compensation_view(job)) is not None:
        body["compensations"] = compensations
    return body
