"""Spans from the committed commands: one per job and one per step attempt, for OpenTelemetry.

An `Observer`: it reads each event's commands once committed and adds no path of its own.
Every span gets the id the engine derived for it (`workflow_manager.engine.traceids`), the id the
step request's `traceparent` names, so a worker's span joins the same tree. Imported only when
OTEL_EXPORTER_OTLP_ENDPOINT is set: needs the `otel` extra (the OpenTelemetry SDK).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode

from workflow_manager.engine import (
    Command,
    Dispatch,
    Job,
    JobFinished,
    JobStarted,
    StepFinished,
    StepStatus,
)
from workflow_manager.engine.traceids import job_span_id, step_span_id

__all__ = ["SpanRecorder", "span_recorder_from_env"]

log = logging.getLogger(__name__)

SERVICE = "workflow-manager"
_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
# StepFinished's outcome and reason, as a span's outcome attribute.
_OUTCOMES = {
    "completed": "completed",
    "retrying": "retried",
    "failed": "failed",
    "skipped": "skipped",
}
_FINE = frozenset({"completed", "skipped"})


class _ChosenIds(IdGenerator):
    """Gives the SDK the ids we derived, for the one span about to start."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_span_id(self) -> int:
        """The chosen span id."""
        return self.span_id

    def generate_trace_id(self) -> int:
        """The chosen trace id (asked for only when the span has no parent)."""
        return self.trace_id


@dataclass(frozen=True, slots=True)
class _Sent:
    """A step attempt out with a worker: enough to close its span if it never finishes."""

    attempt: int
    at: float
    workflow: str
    root_id: str
    trace_id: str


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class SpanRecorder:
    """An observer that makes a span per job and per step attempt, with their real times."""

    def __init__(
        self,
        processor: SpanProcessor,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        env = environ or {}
        self._ids = _ChosenIds()
        name = env.get("OTEL_SERVICE_NAME") or SERVICE
        self._provider = TracerProvider(
            resource=Resource.create({SERVICE_NAME: name}), id_generator=self._ids
        )
        self._provider.add_span_processor(processor)
        self._tracer = self._provider.get_tracer("workflow-manager")
        self._clock = clock
        self._started: dict[str, float] = {}  # job id -> when it (re)started
        self._sent: dict[str, dict[str, _Sent]] = {}  # job id -> step -> the attempt out

    def __repr__(self) -> str:
        return f"<SpanRecorder jobs={len(self._started)}>"

    def recovered(self, jobs: Iterable[Job]) -> None:
        """Pick up the running jobs' start times and the attempts out with workers."""
        for job in jobs:
            self._started[job.id] = job.submitted_at
            for run in job.steps.values():
                out = run.status is StepStatus.RUNNING and run.dispatched_at is not None
                if out and run.spec.task is None:
                    sent = _Sent(
                        run.attempt, run.dispatched_at or 0.0, job.workflow.name, job.root_id,
                        job.trace_id,
                    )  # fmt: skip
                    self._sent.setdefault(job.id, {})[run.name] = sent

    def observe(self, commands: Sequence[Command]) -> None:
        """Note starts and dispatches; make the spans of the steps and jobs that ended."""
        for command in commands:
            if isinstance(command, Dispatch):
                sent = _Sent(
                    command.attempt, self._clock(), command.workflow, command.root_id,
                    command.trace_id,
                )  # fmt: skip
                self._sent.setdefault(command.job_id, {})[command.step] = sent
            elif isinstance(command, StepFinished):
                self._step_finished(command)
            elif isinstance(command, JobStarted):
                self._started[command.job_id] = command.at
            elif isinstance(command, JobFinished):
                self._job_finished(command)

    def close(self) -> None:
        """Export what is still buffered and stop the exporter."""
        self._provider.shutdown()

    def _step_finished(self, done: StepFinished) -> None:
        if done.outcome == "recovered":
            return  # its failed attempt has its span, and its fallback one of its own
        steps = self._sent.get(done.job_id)
        if steps is not None:
            steps.pop(done.step, None)
        outcome = "timeout" if done.reason == "timeout" else _OUTCOMES.get(done.outcome, "failed")
        start = done.dispatched_at if done.dispatched_at is not None else done.at
        self._span(
            name=done.step,
            trace_id=done.trace_id,
            span_id=step_span_id(done.job_id, done.step, done.attempt),
            parent=job_span_id(done.job_id),
            times=(start, done.at),
            attributes=self._step_attributes(
                done.workflow, done.job_id, done.root_id, done.step, done.attempt, outcome
            ),
            error=done.message if outcome not in _FINE else None,
        )

    def _job_finished(self, done: JobFinished) -> None:
        # Attempts still out when the job ended (cancelled, or stopped by a failure) end here.
        for step, sent in self._sent.pop(done.job_id, {}).items():
            self._span(
                name=step,
                trace_id=sent.trace_id,
                span_id=step_span_id(done.job_id, step, sent.attempt),
                parent=job_span_id(done.job_id),
                times=(sent.at, done.at),
                attributes=self._step_attributes(
                    sent.workflow, done.job_id, sent.root_id, step, sent.attempt, "cancelled"
                ),
                error=None,
            )
        start = self._started.pop(done.job_id, done.submitted_at)
        attributes: dict[str, str | int] = {
            "workflow": done.workflow,
            "job.id": done.job_id,
            "job.root_id": done.root_id,
            "outcome": str(done.status),
        }
        if done.parent_id is not None:
            attributes["job.parent_id"] = done.parent_id
            attributes["task"] = done.flow
        message = (done.error or {}).get("message") if done.status == "failed" else None
        self._span(
            name=done.flow,
            trace_id=done.trace_id,
            span_id=job_span_id(done.job_id),
            parent=done.trace_parent,
            times=(start, done.at),
            attributes=attributes,
            error=str(message) if message is not None else None,
        )

    @staticmethod
    def _step_attributes(
        workflow: str, job_id: str, root_id: str, step: str, attempt: int, outcome: str
    ) -> dict[str, str | int]:
        return {
            "workflow": workflow,
            "job.id": job_id,
            "job.root_id": root_id,
            "step": step,
            "attempt": attempt,
            "outcome": outcome,
        }

    def _span(
        self,
        name: str,
        trace_id: str,
        span_id: str,
        parent: str | None,
        times: tuple[float, float],
        attributes: dict[str, str | int],
        error: str | None,
    ) -> None:
        """Record one finished span with exactly these ids and times."""
        trace_int = int(trace_id, 16)
        self._ids.trace_id, self._ids.span_id = trace_int, int(span_id, 16)
        context = Context()  # no parent but the one named: never the caller's current span
        if parent is not None:
            remote = SpanContext(trace_int, int(parent, 16), is_remote=True, trace_flags=_SAMPLED)
            context = trace.set_span_in_context(NonRecordingSpan(remote), context)
        span = self._tracer.start_span(
            name, context, SpanKind.INTERNAL, attributes, start_time=_ns(times[0])
        )
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=_ns(times[1]))


def span_recorder_from_env(environ: Mapping[str, str]) -> SpanRecorder:
    """A SpanRecorder exporting over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, in batches.

    The exporter reads its own OTEL_EXPORTER_OTLP_* settings (headers, timeout, ...).
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
        environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
    )
    where = urlsplit(endpoint)
    # The URL's path and host only: a user:password in it stays out of the log.
    log.info("exporting a span per job and step attempt to %s%s", where.hostname, where.path)
    return SpanRecorder(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)), environ)
