"""Messages in, engine events out: worker replies and job triggers, read strictly. Pure.

A message that cannot become an event is `Undeliverable`, with the reason written for
whoever looks at the dead-letter queue (and, for a trigger, its sender). Ids come in from the
caller; a malformed `traceparent` is only logged.

Every JSON value a message carries (its body, `x-meta`, `x-meta-patch`) is checked here
against the size and nesting limits, before anything changes: past them a trigger or a signal
is Undeliverable, and a reply becomes the step's error saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workflow_manager.engine import JobSubmitted, SignalReceived, StepReplied
from workflow_manager.engine.jsontext import (
    UNDECIDED,
    deeper_than,
    fast_loads,
    json_type,
    may_nest_past,
)
from workflow_manager.engine.metadata import MAX_META_BYTES, meta_too_big
from workflow_manager.engine.replies import ReplyError, decode_json, too_deep
from workflow_manager.engine.state import MAX_PRIORITY
from workflow_manager.limits import DEFAULT_JSON_DEPTH
from workflow_manager.starttimes import StartTimeError, start_time
from workflow_manager.traces import submitter_trace
from workflow_manager.transport.message import Delivery, header_text, split_correlation_id
from workflow_manager.transport.naming import (
    HEADER_ATTEMPT,
    HEADER_DELAY,
    HEADER_ERROR,
    HEADER_META,
    HEADER_META_PATCH,
    HEADER_NOT_BEFORE,
    HEADER_PRIORITY,
    HEADER_TRACEPARENT,
    TRIGGER_WORKFLOW_HEADER,
)

__all__ = [
    "Undeliverable",
    "reply_event",
    "trigger_event",
    "trigger_meta",
    "trigger_priority",
    "signal_event",
]

_MAX_ATTEMPT = 2**31  # far beyond any retry policy; larger values are noise, not attempts


@dataclass(frozen=True, slots=True)
class Undeliverable:
    """A message that cannot become an engine event, and why."""

    reason: str


def _header_int(headers: Mapping[str, Any] | None, key: str) -> int | None:
    """A header as a positive int, or None when absent or not a sensible number."""
    value = (headers or {}).get(key)
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("ascii", errors="replace")
    if value is None or isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if 0 < number < _MAX_ATTEMPT else None


def trigger_priority(headers: Mapping[str, Any] | None) -> int | Undeliverable:
    """The trigger's `x-priority` header: an integer 0-9 (0 when absent), else why not."""
    value = (headers or {}).get(HEADER_PRIORITY)
    if value is None:
        return 0
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", errors="replace")
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or not 0 <= number <= MAX_PRIORITY:
        return Undeliverable(
            f"trigger header '{HEADER_PRIORITY}' must be an integer from 0 to {MAX_PRIORITY} "
            f"(higher goes first), got {repr(value)[:60]}"
        )
    return number


def reply_event(
    delivery: Delivery, at: float, max_bytes: int, max_depth: int = DEFAULT_JSON_DEPTH
) -> StepReplied | Undeliverable:
    """A worker's reply as an event: raw body, `x-error` and `x-attempt` if present.

    A body over `max_bytes`, or a body or `x-meta-patch` nested deeper than `max_depth`, is
    not kept: the reply becomes an error that says why.
    """
    parts = split_correlation_id(delivery.correlation_id or "")
    if parts is None:
        return Undeliverable(
            f"reply has correlation id {delivery.correlation_id!r}; "
            "expected '<job-uuid>:<step-name>'"
        )
    headers = delivery.headers
    body, error = delivery.body, header_text(headers, HEADER_ERROR)
    meta_patch = header_text(headers, HEADER_META_PATCH)
    if error is None:
        if len(body) > max_bytes:
            body, error = b"", f"reply body is {len(body)} bytes; the limit is {max_bytes}"
        elif _too_deep(body, max_depth):
            body, error = b"", too_deep("reply body", max_depth)
    if meta_patch is not None and _too_deep(meta_patch.encode(), max_depth):
        body, error = b"", too_deep(f"reply header '{HEADER_META_PATCH}'", max_depth)
        meta_patch = None
    return StepReplied(
        job_id=parts[0],
        step=parts[1],
        body=body,
        at=at,
        error=error,
        attempt=_header_int(headers, HEADER_ATTEMPT),
        meta_patch=meta_patch,
        # A copy of a reply whose ack was lost: the engine counts it once (engine/redelivery.py).
        redelivered=delivery.redelivered,
    )


def _too_deep(raw: bytes, max_depth: int) -> bool:
    """True when `raw` is JSON nested deeper than `max_depth`; the engine judges the rest.

    A body with few brackets is not parsed here (most replies): it cannot be too deep.
    """
    if not may_nest_past(raw, max_depth):
        return False
    value = fast_loads(raw)
    # Not JSON, or too deep for orjson to read: the engine's strict reading says which.
    return value is not UNDECIDED and deeper_than(raw, value, max_depth)


def trigger_meta(
    text: str | None, what: str, max_depth: int = DEFAULT_JSON_DEPTH
) -> dict[str, Any] | None | Undeliverable:
    """Job metadata given as JSON text (`what` names where: a header, a query parameter): a
    JSON object, None when absent, else why not."""
    if text is None:
        return None
    raw = text.encode()
    if len(raw) > MAX_META_BYTES:
        return Undeliverable(meta_too_big(len(raw), what))
    try:
        meta = decode_json(raw, what, max_depth)
    except ReplyError as exc:
        return Undeliverable(str(exc).replace(f"{what} body is", f"{what} is", 1))
    if not isinstance(meta, dict):
        return Undeliverable(f"{what} must be a JSON object, got {json_type(meta)}")
    return meta


def trigger_event(
    delivery: Delivery,
    at: float,
    new_id: str,
    max_bytes: int,
    new_trace_id: str = "",
    max_depth: int = DEFAULT_JSON_DEPTH,
) -> JobSubmitted | Undeliverable:
    """A trigger as a submission; `new_id` is used when the sender gave no correlation id.

    The job joins the trace of the trigger's `traceparent` header, else `new_trace_id`'s (a
    malformed header is ignored: empty `new_trace_id`, the engine derives one from the job id).
    An `x-delay` or `x-not-before` header delays its start; a bad one makes it Undeliverable.
    """
    workflow = header_text(delivery.headers, TRIGGER_WORKFLOW_HEADER)
    if not workflow:
        return Undeliverable(
            f"trigger has no '{TRIGGER_WORKFLOW_HEADER}' header; set it to the workflow's name"
        )
    if len(delivery.body) > max_bytes:
        return Undeliverable(
            f"trigger body is {len(delivery.body)} bytes; the limit is {max_bytes}"
        )
    try:
        payload = decode_json(delivery.body, "trigger", max_depth) if delivery.body.strip() else {}
    except ReplyError as exc:
        return Undeliverable(str(exc))
    headers = delivery.headers
    try:
        not_before = start_time(
            header_text(headers, HEADER_DELAY), header_text(headers, HEADER_NOT_BEFORE), at,
            f"header '{HEADER_DELAY}'", f"header '{HEADER_NOT_BEFORE}'",
        )  # fmt: skip
    except StartTimeError as exc:
        return Undeliverable(f"trigger {exc}")
    priority = trigger_priority(headers)
    if isinstance(priority, Undeliverable):
        return priority
    meta = trigger_meta(
        header_text(headers, HEADER_META), f"trigger header '{HEADER_META}'", max_depth
    )
    if isinstance(meta, Undeliverable):
        return meta
    trace = submitter_trace(delivery.headers.get(HEADER_TRACEPARENT), "trigger")
    return JobSubmitted(
        job_id=delivery.correlation_id or new_id,
        workflow=workflow,
        payload=payload,
        at=at,
        reply_to=delivery.reply_to or None,
        trace_id=trace.trace_id if trace else new_trace_id or None,
        trace_parent=trace.span_id if trace else None,
        not_before=not_before,
        priority=priority,
        meta=meta,
    )


def signal_event(
    delivery: Delivery, at: float, max_bytes: int, max_depth: int = DEFAULT_JSON_DEPTH
) -> SignalReceived | Undeliverable:
    """A message of the signals queue as a signal: correlation id `<job-uuid>:<step>`, and a
    JSON object body (empty counts as `{}`) that becomes the waiting step's output."""
    parts = split_correlation_id(delivery.correlation_id or "")
    if parts is None:
        return Undeliverable(
            f"signal has correlation id {delivery.correlation_id!r}; "
            "expected '<job-uuid>:<step-name>' (the job and its waiting step)"
        )
    if len(delivery.body) > max_bytes:
        return Undeliverable(f"signal body is {len(delivery.body)} bytes; the limit is {max_bytes}")
    try:
        payload = decode_json(delivery.body, "signal", max_depth) if delivery.body.strip() else {}
    except ReplyError as exc:
        return Undeliverable(str(exc))
    if not isinstance(payload, dict):
        return Undeliverable(f"signal body must be a JSON object, got {json_type(payload)}")
    return SignalReceived(job_id=parts[0], step=parts[1], payload=payload, at=at)
