"""Prometheus metrics of one manager: counted from the committed commands, a few read at scrape.

`Metrics` is an `Observer` (workflow_manager.observers): jobs and steps are counted from each
committed event's commands, the running gauge is set again from the recovered jobs, and dead letters
are counted where the orchestrator makes them. The broker connection and the publishes in flight
are read from the orchestrator when /metrics is scraped; the journal reports each group
commit's time through a callback. Labels are names from the workflow definitions, never ids.

One `CollectorRegistry` per manager, never prometheus_client's global one. Observing is on the
path of every message, so each label child is looked up once per (workflow, step) and kept.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from workflow_manager.config.models import Workflow
from workflow_manager.engine import (
    BulkProgress,
    Command,
    Dispatch,
    Job,
    JobDebounced,
    JobDuplicate,
    JobFinished,
    JobForked,
    JobQueued,
    JobScheduled,
    JobStarted,
    JobStatus,
    JobThrottled,
    ScheduleFired,
    StepCompensation,
    StepFinished,
    StepStatus,
    StepThrottled,
    StepWaiting,
    ThrottleEnded,
)
from workflow_manager.fanmetrics import FAN_IN_METRIC_NAMES, FanInCounters
from workflow_manager.payloads.metrics import PAYLOAD_METRIC_NAMES, PayloadMetrics
from workflow_manager.payloads.stage import PayloadCounts

__all__ = ["Metrics", "Watched", "METRIC_NAMES"]

_P = "workflow_manager_"

# A step takes milliseconds (a no-op worker) to an hour (a long computation); a job, up to days.
STEP_BUCKETS_S = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
    3600.0,
)  # fmt: skip
JOB_BUCKETS_S = (
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14_400.0,
    86_400.0,
)  # fmt: skip
# A group commit is one transaction (one fsync): sub-millisecond to a slow disk's tenth.
COMMIT_BUCKETS_S = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip

_FAILED_OUTCOMES = frozenset({"retrying", "failed"})

METRIC_NAMES: dict[str, str] = {
    f"{_P}jobs_started_total": "counter",
    f"{_P}jobs_finished_total": "counter",
    f"{_P}jobs_running": "gauge",
    f"{_P}jobs_queued": "gauge",
    f"{_P}schedule_firings_total": "counter",
    f"{_P}jobs_forked_total": "counter",
    f"{_P}duplicate_triggers_total": "counter",
    f"{_P}triggers_debounced_total": "counter",
    f"{_P}bulk_jobs_total": "counter",
    f"{_P}jobs_scheduled": "gauge",
    f"{_P}steps_waiting": "gauge",
    f"{_P}job_duration_seconds": "histogram",
    f"{_P}step_requests_total": "counter",
    f"{_P}step_failures_total": "counter",
    f"{_P}step_duration_seconds": "histogram",
    f"{_P}steps_skipped_total": "counter",
    f"{_P}steps_recovered_total": "counter",
    f"{_P}throttled_total": "counter",
    f"{_P}throttle_wait_seconds": "histogram",
    f"{_P}compensations_total": "counter",
    f"{_P}dead_letters_total": "counter",
    f"{_P}journal_commit_seconds": "histogram",
    f"{_P}broker_connected": "gauge",
    f"{_P}outbox_pending": "gauge",
    f"{_P}partitions_owned": "gauge",
    f"{_P}lease_renewal_seconds": "gauge",
    f"{_P}rejoins_total": "counter",
    f"{_P}webhook_requests_total": "counter",
    **FAN_IN_METRIC_NAMES,
    **PAYLOAD_METRIC_NAMES,
}
"""Every metric /metrics exposes, by its exposed name, with its type (for docs and tests)."""


class Watched(Protocol):
    """What the scrape-time gauges read: the orchestrator."""

    @property
    def connected(self) -> bool:
        """True while connected to the broker, with the manager's consumers in place."""
        ...

    @property
    def publishes_pending(self) -> int:
        """Publishes sent and not yet confirmed (or waiting for the broker)."""
        ...


class Leased(Protocol):
    """What the partition gauges read: the manager's leases (workflow_manager.cluster.Ownership)."""

    @property
    def held(self) -> Mapping[int, int]:
        """Partition -> epoch of every lease held."""
        ...

    @property
    def renewal_s(self) -> float:
        """Seconds the last renewal took."""
        ...


@dataclass(slots=True)
class _WorkflowSeries:
    """The label children of one workflow's job metrics."""

    started: Any
    running: Any
    duration: Any
    queued: Any
    scheduled: Any
    duplicates: Any


class Metrics:
    """The manager's Prometheus metrics, in a registry of its own; an Observer of committed runs."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, workflows: Mapping[str, Workflow] | Iterable[str] = ()) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        wf, step = ["workflow"], ["workflow", "step"]
        self._jobs_started = Counter(
            f"{_P}jobs_started", "Top-level jobs started (a retried job starts again).", wf,
            registry=r,
        )  # fmt: skip
        self._jobs_finished = Counter(
            f"{_P}jobs_finished",
            "Top-level jobs ended, by status (completed, failed, cancelled).",
            [*wf, "status"], registry=r,
        )  # fmt: skip
        self._jobs_running = Gauge(
            f"{_P}jobs_running", "Top-level jobs running now (their on_error steps too).", wf,
            registry=r,
        )  # fmt: skip
        self._jobs_queued = Gauge(
            f"{_P}jobs_queued", "Top-level jobs waiting under a concurrency limit (or a rate) now.",
            wf,
            registry=r,
        )  # fmt: skip
        self._jobs_scheduled = Gauge(
            f"{_P}jobs_scheduled", "Top-level jobs waiting for a delayed start.", wf, registry=r
        )
        self._schedule_firings = Counter(
            f"{_P}schedule_firings", "Jobs started by a schedule's firing.",
            [*wf, "schedule"], registry=r,
        )  # fmt: skip
        self._jobs_forked = Counter(
            f"{_P}jobs_forked", "Jobs made as forks of another job (POST /api/job/{id}/fork).",
            wf, registry=r,
        )  # fmt: skip
        self._duplicate_triggers = Counter(
            f"{_P}duplicate_triggers", "Submissions (AMQP triggers, POST /api/job) answered as "
            "duplicates: an unfinished job of the workflow holds their unique key.", wf,
            registry=r,
        )  # fmt: skip
        self._triggers_debounced = Counter(
            f"{_P}triggers_debounced", "Triggers (AMQP, POST /api/workflow) answered debounced: "
            "they joined the open debounce window of a job of the workflow.", wf, registry=r,
        )  # fmt: skip
        self._bulk_jobs = Counter(
            f"{_P}bulk_jobs", "Jobs bulk actions acted on, by action and outcome (changed, "
            "refused: the action could not change the job).", ["action", "outcome"], registry=r,
        )  # fmt: skip
        self._job_duration = Histogram(
            f"{_P}job_duration_seconds", "Top-level jobs: seconds from (re)start to end.", wf,
            buckets=JOB_BUCKETS_S, registry=r,
        )  # fmt: skip
        self._step_requests = Counter(
            f"{_P}step_requests", "Step requests sent to workers (each attempt counts).", step,
            registry=r,
        )  # fmt: skip
        self._step_failures = Counter(
            f"{_P}step_failures",
            "Failed step attempts, by reason (error, timeout, invalid_reply).",
            [*step, "reason"], registry=r,
        )  # fmt: skip
        self._step_duration = Histogram(
            f"{_P}step_duration_seconds",
            "Step attempts: seconds from request to reply (or timeout); a task step's fan-out.",
            step, buckets=STEP_BUCKETS_S, registry=r,
        )  # fmt: skip
        self._steps_skipped = Counter(
            f"{_P}steps_skipped", "Steps skipped by their `when` (no request sent).", step,
            registry=r,
        )  # fmt: skip
        self._steps_waiting = Gauge(
            f"{_P}steps_waiting", "Steps waiting for a signal (wait: true), child jobs' too.", step,
            registry=r,
        )  # fmt: skip
        self._throttled = Counter(
            f"{_P}throttled", "Step requests throttled by the step's rate limit, and top-level "
            "jobs by their workflow's (step \"\"; each wait for a turn counts).", step, registry=r,
        )  # fmt: skip
        self._throttle_wait = Histogram(
            f"{_P}throttle_wait_seconds", "Throttled step requests (and jobs, step \"\"): seconds "
            "from throttled to sent or started (their turn under the rate limit).", step,
            buckets=JOB_BUCKETS_S, registry=r,
        )  # fmt: skip
        self._steps_recovered = Counter(
            f"{_P}steps_recovered", "Failed steps whose fallback succeeded (the job went on).",
            step, registry=r,
        )  # fmt: skip
        self._compensations = Counter(
            f"{_P}compensations", "Compensations that ended, by outcome (compensated, failed).",
            [*step, "outcome"], registry=r,
        )  # fmt: skip
        self._dead_letters = Counter(
            f"{_P}dead_letters",
            "Messages dead-lettered, by reason (bad_reply, invalid_trigger, unknown_workflow, "
            "invalid_id, invalid_payload, bad_signal, failed_trigger, failed_reply, "
            "failed_signal).",
            ["reason"], registry=r,
        )  # fmt: skip
        self._commit_seconds = Histogram(
            f"{_P}journal_commit_seconds", "Seconds per journal group commit (one transaction).",
            buckets=COMMIT_BUCKETS_S, registry=r,
        )  # fmt: skip
        self._connected = Gauge(
            f"{_P}broker_connected", "1 while connected to RabbitMQ, else 0.", registry=r
        )
        self._pending = Gauge(
            f"{_P}outbox_pending", "Publishes in flight: sent, not yet confirmed.", registry=r
        )
        self._owned = Gauge(
            f"{_P}partitions_owned", "Partitions this manager runs (0 without --partitions).",
            registry=r,
        )  # fmt: skip
        self._renewal = Gauge(
            f"{_P}lease_renewal_seconds", "Seconds the last renewal of this manager's partition "
            "leases took (0 without --partitions).", registry=r,
        )  # fmt: skip
        self._rejoins = Counter(
            f"{_P}rejoins", "Times this manager stopped running its partitions and rejoined "
            "as a standby: cause lease (taken over, or not renewed in time) or database.",
            ["cause"], registry=r,
        )  # fmt: skip
        self._webhook_requests = Counter(
            f"{_P}webhook_requests", "Requests to POST /hooks/<webhook>, by outcome (accepted, "
            "duplicate, debounced, no_match, refused, bad_signature, stale, invalid_body, "
            "unavailable).",
            ["webhook", "outcome"], registry=r,
        )  # fmt: skip
        self._workflows: dict[str, _WorkflowSeries] = {}
        self._requests = _Children(self._step_requests)
        self._durations = _Children(self._step_duration)
        self._failures = _Children(self._step_failures)
        self._skipped = _Children(self._steps_skipped)
        self._recovered = _Children(self._steps_recovered)
        self._undone = _Children(self._compensations)
        self._waits = _Children(self._steps_waiting)
        self._throttles = _Children(self._throttled)
        self._throttle_waits = _Children(self._throttle_wait)
        self._firings = _Children(self._schedule_firings)
        self._forks = _Children(self._jobs_forked)
        self._debounced = _Children(self._triggers_debounced)
        # Each job's steps waiting for a signal: the gauge goes down when one ends, or its job.
        self._waiting: dict[str, set[str]] = {}
        self._finished = _Children(self._jobs_finished)
        self._dead = _Children(self._dead_letters)
        # When each running top-level job (re)started; a recovered one counts from submission.
        self._started_at: dict[str, float] = {}
        # Top-level jobs waiting to start (scheduled, or queued), and the gauge each counts in.
        self._unstarted: dict[str, Any] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
            JobScheduled: self._job_scheduled,
            JobQueued: self._job_queued,
            ScheduleFired: self._schedule_fired,
            JobForked: self._job_forked,
            JobDuplicate: self._job_duplicate,
            JobDebounced: self._job_debounced,
            BulkProgress: self._bulk_progress,
            StepWaiting: self._step_waiting,
            StepThrottled: self._step_throttled,
            JobThrottled: self._job_throttled,
            ThrottleEnded: self._throttle_ended,
            Dispatch: self._dispatched,
            StepFinished: self._step_finished,
            StepCompensation: self._step_compensation,
            JobStarted: self._job_started,
            JobFinished: self._job_finished,
        }
        # Joins and reductions need the definitions: which steps have a join, or are reducers.
        served = workflows if isinstance(workflows, Mapping) else {}
        self._fan_in = FanInCounters(r, served)
        self._payloads = PayloadMetrics(PayloadCounts())  # at 0 until `watch_payloads`
        r.register(self._payloads)
        for name in workflows:
            self._workflow(name)  # every workflow served shows, at 0, before its first job

    def __repr__(self) -> str:
        return f"<Metrics {len(self._workflows)} workflows {len(self._requests)} steps>"

    def watch(self, source: Watched) -> None:
        """Read the broker connection and the publishes in flight from `source` at each scrape."""
        self._connected.set_function(lambda: 1.0 if source.connected else 0.0)
        self._pending.set_function(lambda: float(source.publishes_pending))

    def watch_leases(self, source: Leased) -> None:
        """Read the partitions held and the last renewal's seconds from `source` at each scrape."""
        self._owned.set_function(lambda: float(len(source.held)))
        self._renewal.set_function(lambda: source.renewal_s)

    def watch_payloads(self, counts: PayloadCounts) -> None:
        """Read what the payload stage stored and read back from `counts` at each scrape."""
        self._payloads.counts = counts

    def rejoined(self, cause: str) -> None:
        """This manager stopped running its partitions and rejoins as a standby (`cause`:
        lease or database)."""
        self._rejoins.labels(cause=cause).inc()

    def webhook_request(self, webhook: str, outcome: str) -> None:
        """A request to a declared webhook source ended with `outcome` (api.webhooks.OUTCOMES)."""
        self._webhook_requests.labels(webhook=webhook, outcome=outcome).inc()

    def render(self) -> bytes:
        """The metrics in the Prometheus text format (served as `content_type`)."""
        return generate_latest(self.registry)

    # -- what the pipeline reports -----------------------------------------------------

    def recovered(self, jobs: Iterable[Job]) -> None:
        """Set the running and scheduled gauges from the jobs recovery brought back (top-level)."""
        running: collections.Counter[str] = collections.Counter()
        self._unstarted.clear()
        for series in self._workflows.values():
            series.running.set(0)
            series.scheduled.set(0)
            series.queued.set(0)
        for job in jobs:
            if job.parent is not None:
                continue
            if job.status in (JobStatus.SCHEDULED, JobStatus.QUEUED):
                series = self._workflow(job.workflow.name)
                gauge = series.scheduled if job.status is JobStatus.SCHEDULED else series.queued
                gauge.inc()
                self._unstarted[job.id] = gauge
            elif not job.is_settled:
                # A failed job still running its on_error steps has not ended yet.
                running[job.workflow.name] += 1
        for name, count in running.items():
            self._workflow(name).running.set(count)
        self._recover_waits(jobs)

    def _recover_waits(self, jobs: Iterable[Job]) -> None:
        """Set the waiting-steps gauge from the recovered jobs (children too)."""
        self._waiting.clear()
        for child in self._waits.values():
            child.set(0)
        for job in jobs:
            for run in job.steps.values():
                if run.status is StepStatus.WAITING and job.is_live(run.name):
                    self._waiting.setdefault(job.id, set()).add(run.name)
                    self._waits(job.workflow.name, run.name).inc()

    def observe(self, commands: Sequence[Command]) -> None:
        """Count one committed event's commands."""
        handlers = self._handlers
        for command in commands:
            handler = handlers.get(type(command))
            if handler is not None:
                handler(command)

    def dead_lettered(self, reason: str) -> None:
        """A message went to the dead-letter queue; `reason` is a short fixed label."""
        self._dead(reason).inc()

    def journal_committed(self, seconds: float) -> None:
        """The journal wrote one group commit in `seconds`."""
        self._commit_seconds.observe(seconds)

    # -- commands ----------------------------------------------------------------------

    def _dispatched(self, command: Dispatch) -> None:
        self._requests(command.workflow, command.step).inc()

    def _step_throttled(self, command: StepThrottled) -> None:
        self._throttles(command.workflow, command.step).inc()

    def _job_throttled(self, command: JobThrottled) -> None:
        self._throttles(command.workflow, "").inc()  # a workflow's rate: no step

    def _throttle_ended(self, command: ThrottleEnded) -> None:
        self._throttle_waits(command.workflow, command.step).observe(command.waited_s)

    def _step_waiting(self, command: StepWaiting) -> None:
        self._waiting.setdefault(command.job_id, set()).add(command.step)
        self._waits(command.workflow, command.step).inc()

    def _wait_ended(self, job_id: str, workflow: str, step: str | None) -> None:
        """A waiting step ended (or, `step` None, every one of its job's: the job ended)."""
        steps = self._waiting.get(job_id)
        if not steps:
            return
        ended = list(steps) if step is None else [step] if step in steps else []
        for name in ended:
            steps.discard(name)
            self._waits(workflow, name).dec()
        if not steps:
            del self._waiting[job_id]

    def _step_finished(self, command: StepFinished) -> None:
        if self._waiting:
            self._wait_ended(command.job_id, command.workflow, command.step)
        if command.outcome == "skipped":
            self._skipped(command.workflow, command.step).inc()
            return
        if command.outcome == "recovered":
            # Its failed attempt was timed and counted when it failed.
            self._recovered(command.workflow, command.step).inc()
            return
        if command.dispatched_at is not None:
            duration = self._durations(command.workflow, command.step)
            duration.observe(command.at - command.dispatched_at)
        if command.outcome in _FAILED_OUTCOMES:
            self._failures(command.workflow, command.step, command.reason or "error").inc()
        else:
            self._fan_in.step_finished(command)

    def _job_scheduled(self, command: JobScheduled) -> None:
        self._join_unstarted(command.job_id, self._workflow(command.workflow).scheduled)

    def _schedule_fired(self, command: ScheduleFired) -> None:
        self._firings(command.workflow, command.schedule).inc()

    def _bulk_progress(self, command: BulkProgress) -> None:
        if command.changed:
            self._bulk_jobs.labels(command.action, "changed").inc(command.changed)
        if command.refused:
            self._bulk_jobs.labels(command.action, "refused").inc(command.refused)

    def _job_forked(self, command: JobForked) -> None:
        self._forks(command.workflow).inc()

    def _job_duplicate(self, command: JobDuplicate) -> None:
        self._workflow(command.workflow).duplicates.inc()

    def _job_debounced(self, command: JobDebounced) -> None:
        self._debounced(command.workflow).inc()

    def _job_queued(self, command: JobQueued) -> None:
        self._join_unstarted(command.job_id, self._workflow(command.workflow).queued)

    def _join_unstarted(self, job_id: str, gauge: Any) -> None:
        """The job waits to start, counted in `gauge` (a scheduled job may queue next)."""
        self._leave_unstarted(job_id)
        gauge.inc()
        self._unstarted[job_id] = gauge

    def _leave_unstarted(self, job_id: str) -> bool:
        """The job no longer waits to start; True if it was waiting."""
        gauge = self._unstarted.pop(job_id, None)
        if gauge is None:
            return False
        gauge.dec()
        return True

    def _step_compensation(self, command: StepCompensation) -> None:
        if command.outcome != "compensating":
            self._undone(command.workflow, command.step, command.outcome).inc()

    def _job_started(self, command: JobStarted) -> None:
        if command.parent_id is not None:
            return  # a child job counts in its steps, under its top-level workflow
        series = self._workflow(command.workflow)
        self._leave_unstarted(command.job_id)
        series.started.inc()
        series.running.inc()
        self._started_at[command.job_id] = command.at

    def _job_finished(self, command: JobFinished) -> None:
        if self._waiting:
            self._wait_ended(command.job_id, command.workflow, None)
        if command.parent_id is not None:
            return
        series = self._workflow(command.workflow)
        self._finished(command.workflow, str(command.status)).inc()
        if self._leave_unstarted(command.job_id):
            return  # cancelled before it started: it never ran
        series.running.dec()
        started_at = self._started_at.pop(command.job_id, command.submitted_at)
        series.duration.observe(max(0.0, command.at - started_at))

    # -- label children, made once ---------------------------------------------------------

    def _workflow(self, name: str) -> _WorkflowSeries:
        series = self._workflows.get(name)
        if series is None:
            series = self._workflows[name] = _WorkflowSeries(
                self._jobs_started.labels(name),
                self._jobs_running.labels(name),
                self._job_duration.labels(name),
                self._jobs_queued.labels(name),
                self._jobs_scheduled.labels(name),
                self._duplicate_triggers.labels(name),
            )
        return series


class _Children:
    """A labelled metric's children, each made the first time its label values are seen.

    `labels()` costs a lock and a lookup of its own on every call; this keeps the children.
    """

    __slots__ = ("_metric", "_made")

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._made: dict[tuple[str, ...], Any] = {}

    def values(self) -> list[Any]:
        """The children made so far."""
        return list(self._made.values())

    def __len__(self) -> int:
        return len(self._made)

    def __call__(self, *values: str) -> Any:
        """The child for these label values."""
        child = self._made.get(values)
        if child is None:
            child = self._made[values] = self._metric.labels(*values)
        return child
