"""pyworker's handler spans: the request's traceparent is their parent; off without an SDK."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pyworker import StepContext
from pyworker.tracing import HandlerSpans, tracing_available

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"


def test_an_explicit_provider_makes_spans_active(exported):
    assert exported[0].active


def _ctx(**headers: object) -> StepContext:
    headers = {"x-attempt": 2, "x-workflow": "w", **headers}
    return StepContext.from_properties(
        queue="count", correlation_id=f"{JOB}:count", headers=headers
    )


@pytest.fixture
def exported() -> tuple[HandlerSpans, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return HandlerSpans(provider), exporter


def test_the_context_shows_the_requests_traceparent():
    header = f"00-{TRACE_ID}-{SPAN_ID}-01"
    assert _ctx(traceparent=header.encode()).traceparent == header
    assert _ctx().traceparent is None


def test_the_handler_runs_in_a_consumer_span_whose_parent_is_the_requests_span(exported):
    spans, exporter = exported
    with spans.span(_ctx(traceparent=f"00-{TRACE_ID}-{SPAN_ID}-01")):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.kind is SpanKind.CONSUMER and span.name == "process count"
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None and format(span.parent.span_id, "016x") == SPAN_ID
    assert dict(span.attributes or {}) == {
        "messaging.system": "rabbitmq",
        "messaging.operation": "process",
        "messaging.destination.name": "count",
        "job.id": JOB,
        "step": "count",
        "attempt": 2,
        "workflow": "w",
    }


@pytest.mark.parametrize("header", [None, "00-garbage-01"])
def test_without_a_usable_traceparent_the_span_starts_a_trace(exported, header):
    spans, exporter = exported
    with spans.span(_ctx() if header is None else _ctx(traceparent=header)):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.parent is None


def test_a_handlers_exception_is_recorded_on_its_span_and_raised_on(exported):
    spans, exporter = exported
    with pytest.raises(ValueError, match="boom"), spans.span(_ctx()):
        raise ValueError("boom")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]


def test_with_no_sdk_set_up_no_span_is_started():
    assert tracing_available()
    spans = HandlerSpans()  # the global provider: no SDK has set one in the tests
    assert not spans.active
