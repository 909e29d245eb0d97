"""Messages as the manager sees them: a `Delivery` in, an `Outbound` out. Pure.

Every wire detail the rest of the manager needs is here or in `naming`: the headers a step
request and an outcome notice carry, and the shape of a correlation id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from payload_refs.refs import count_ref_keys
from workflow_manager.transport.naming import (
    HEADER_ATTEMPT,
    HEADER_JOB_ID,
    HEADER_META,
    HEADER_PAYLOAD_REFS,
    HEADER_STATUS,
    HEADER_TRACEPARENT,
    HEADER_WORKFLOW,
)

__all__ = [
    "duplicate_notice",
    "debounced_notice",
    "Delivery",
    "Outbound",
    "step_request",
    "outcome_notice",
    "split_correlation_id",
    "header_text",
]


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message consumed from a queue; `handle` is the transport's own, to ack it with.

    `redelivered`: the broker delivered it before and it was not acked (AMQP's flag).
    """

    queue: str
    body: bytes
    correlation_id: str | None = None
    reply_to: str | None = None
    headers: Mapping[str, Any] = field(default_factory=dict)
    message_id: str | None = None
    handle: Any = None
    redelivered: bool = False


@dataclass(frozen=True, slots=True)
class Outbound:
    """A message to publish (persistent JSON on the default exchange) and confirm.

    `message_id` doubles as its id in the journal (None: not journaled). `step_request`: the
    queue is a step queue, ours to declare again if it vanished; any other unroutable message
    (a notice to a reply queue that is gone) can never be delivered and is dropped.
    `exchange`: publish to this exchange instead, with `queue` as the routing key; no queue
    need be bound (a run event nobody listens to is no error). `priority`: the AMQP
    priority property (0: none set), honoured by a queue declared with `x-max-priority`.
    """

    queue: str
    body: bytes
    correlation_id: str | None = None
    reply_to: str | None = None
    headers: Mapping[str, Any] = field(default_factory=dict)
    message_id: str | None = None
    step_request: bool = False
    exchange: str = ""
    priority: int = 0


def step_request(
    queue: str,
    body: bytes,
    correlation_id: str,
    reply_to: str,
    workflow: str,
    attempt: int,
    message_id: str,
    traceparent: str | None = None,
    priority: int = 0,
    meta: Mapping[str, Any] | None = None,
) -> Outbound:
    """A step request as docs/protocol.md describes it; `traceparent` names the attempt's span.

    `priority` is the job's: the message's AMQP priority. `meta` is the job's metadata, sent as
    the `x-meta` header (JSON text).
    """
    headers: dict[str, Any] = {HEADER_WORKFLOW: workflow, HEADER_ATTEMPT: attempt}
    if traceparent is not None:
        headers[HEADER_TRACEPARENT] = traceparent
    if meta is not None:
        headers[HEADER_META] = json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
    if refs := count_ref_keys(body):  # a scan of bytes: cheap for every request
        headers[HEADER_PAYLOAD_REFS] = refs
    return Outbound(
        queue, body, correlation_id, reply_to, headers, message_id, step_request=True,
        priority=priority,
    )  # fmt: skip


def outcome_notice(
    reply_to: str, job_id: str, status: str, body: bytes, message_id: str | None
) -> Outbound:
    """How a job ended (or why it was rejected), for the `reply_to` of its trigger; a result
    that holds payload references says so (`x-payload-refs`), as a step request does."""
    headers: dict[str, Any] = {HEADER_STATUS: status}
    if refs := count_ref_keys(body):
        headers[HEADER_PAYLOAD_REFS] = refs
    return Outbound(reply_to, body, job_id, None, headers, message_id)


def duplicate_notice(reply_to: str, job_id: str, existing: str, body: bytes) -> Outbound:
    """A trigger that started no job, for its `reply_to`: `existing` has its unique key."""
    headers = {HEADER_STATUS: "duplicate", HEADER_JOB_ID: existing}
    return Outbound(reply_to, body, job_id or None, None, headers, None)


def debounced_notice(reply_to: str, job_id: str, existing: str, body: bytes) -> Outbound:
    """A trigger that joined an open debounce window, for its `reply_to`: job `existing` does
    its work."""
    headers = {HEADER_STATUS: "debounced", HEADER_JOB_ID: existing}
    return Outbound(reply_to, body, job_id or None, None, headers, None)


def split_correlation_id(correlation_id: str) -> tuple[str, str] | None:
    """`<job-uuid>:<step-name>` as (job id, step name), or None when it has no such shape."""
    job_id, sep, step = correlation_id.partition(":")
    if not sep or not job_id or not step:
        return None
    return job_id, step


def header_text(headers: Mapping[str, Any] | None, key: str) -> str | None:
    """A header as text a person can read, or None when absent.

    AMQP clients send strings as str or bytes (decoded as UTF-8); a number as its digits, a
    boolean as true/false, a time as RFC 3339, a table or an array as JSON.
    """
    value = (headers or {}).get(key)
    if value is None:
        return None
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=_plain)
    return _plain(value)


def _plain(value: Any) -> str:
    """One AMQP field value as text (also each non-JSON value inside a table, for `json`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)  # int, float, Decimal: their digits
