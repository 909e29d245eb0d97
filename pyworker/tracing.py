"""Handler spans: with OpenTelemetry installed, each handler runs in a span of the job's trace.

The span's parent is the request's `traceparent` (the manager's span of this step attempt),
so what the handler traces joins the job's trace. Without `opentelemetry-api` installed this
costs nothing and imports nothing. Replies carry nothing new.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from pyworker.context import StepContext

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the optional dependency is absent: handlers run with no span
    otel_trace = None  # type: ignore[assignment]

__all__ = ["HandlerSpans", "tracing_available"]

_TRACER_NAME = "pyworker"


def tracing_available() -> bool:
    """True when opentelemetry-api is installed, so handlers run in spans."""
    return otel_trace is not None


class HandlerSpans:
    """Starts a CONSUMER span around each handler, continuing the request's trace.

    `tracer_provider` is an OpenTelemetry TracerProvider; None means the global one (set by
    your OpenTelemetry set-up, e.g. `opentelemetry-instrument`).
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        self._tracer = None
        self._provider = tracer_provider
        if otel_trace is not None:
            self._tracer = otel_trace.get_tracer(_TRACER_NAME, tracer_provider=tracer_provider)
            self._propagator = TraceContextTextMapPropagator()

    @property
    def active(self) -> bool:
        """False with no OpenTelemetry, or only its API and no SDK set up: nothing to record."""
        if self._tracer is None:
            return False
        unset = otel_trace.ProxyTracerProvider  # the global provider until an SDK sets one
        return self._provider is not None or not isinstance(otel_trace.get_tracer_provider(), unset)

    @contextlib.contextmanager
    def span(self, ctx: StepContext) -> Iterator[None]:
        """Run the body inside the handler's span (no span without OpenTelemetry)."""
        tracer = self._tracer
        if tracer is None or not self.active:
            yield
            return
        carrier = {"traceparent": ctx.traceparent} if ctx.traceparent else {}
        attributes: dict[str, str | int] = {
            "messaging.system": "rabbitmq",
            "messaging.operation": "process",
            "messaging.destination.name": ctx.queue,
            "job.id": ctx.job_id,
            "step": ctx.step,
            "attempt": ctx.attempt,
        }
        if ctx.workflow:
            attributes["workflow"] = ctx.workflow
        with tracer.start_as_current_span(
            f"process {ctx.queue}",
            context=self._propagator.extract(carrier),
            kind=otel_trace.SpanKind.CONSUMER,
            attributes=attributes,
        ):
            yield
