"""Traces: a job's W3C trace context from its submitter, or a new one.

Only the header: nothing here imports OpenTelemetry. `workflow_manager.traces.export` (imported only
when OTEL_EXPORTER_OTLP_ENDPOINT is set) turns the committed commands into spans.
"""

from __future__ import annotations

import logging
import secrets

from workflow_manager.engine.traceids import TraceParent, parse_traceparent

__all__ = ["TraceParent", "new_trace_id", "submitter_trace"]

log = logging.getLogger(__name__)

_told = False  # a malformed header is told at INFO once, then at DEBUG: senders repeat it


def new_trace_id() -> str:
    """A random trace id (32 hex digits, never all zero) for a job that brings no trace."""
    while True:
        trace_id = secrets.token_hex(16)
        if trace_id.strip("0"):
            return trace_id


def submitter_trace(value: object, where: str) -> TraceParent | None:
    """The trace a submission's `traceparent` names; None (and a log line) when malformed.

    A malformed header never refuses a job: the job starts a trace of its own instead.
    """
    if value is None:
        return None
    trace = parse_traceparent(value)
    if trace is None:
        global _told
        level = logging.DEBUG if _told else logging.INFO
        _told = True
        shown = repr(value)[:80]
        log.log(
            level, "%s: ignoring malformed traceparent %s; the job starts a new trace", where, shown
        )
    return trace
