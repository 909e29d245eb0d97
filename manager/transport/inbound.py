"""Turning inbound AMQP messages (worker replies, job triggers) into engine events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aio_pika.abc import AbstractIncomingMessage

from manager.engine import JobSubmitted, StepReplied
from manager.engine.replies import ReplyError, decode_json
from manager.transport.naming import HEADER_ATTEMPT, HEADER_ERROR, TRIGGER_WORKFLOW_HEADER

__all__ = ["TriggerError", "header_text", "reply_event", "trigger_event"]


class TriggerError(Exception):
    """A trigger message cannot become a job submission; the message says why, for its sender."""


def header_text(headers: Mapping[str, Any] | None, key: str) -> str | None:
    """A header as text (AMQP clients send strings as str or bytes), or None when absent."""
    value = (headers or {}).get(key)
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


_MAX_ATTEMPT = 2**31  # far beyond any retry policy; larger values are noise, not attempts


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


def reply_event(message: AbstractIncomingMessage, at: float, max_bytes: int) -> StepReplied:
    """A worker's reply as an event: raw body, `x-error` and `x-attempt` if present.

    A body over `max_bytes` is not kept: the reply becomes an error that gives the size.
    """
    headers = message.headers
    body, error = message.body, header_text(headers, HEADER_ERROR)
    if len(body) > max_bytes and error is None:
        body, error = b"", f"reply body is {len(body)} bytes; the limit is {max_bytes}"
    return StepReplied(
        correlation_id=message.correlation_id or "",
        body=body,
        at=at,
        error=error,
        attempt=_header_int(headers, HEADER_ATTEMPT),
    )


def trigger_event(
    message: AbstractIncomingMessage, at: float, new_id: str, max_bytes: int
) -> JobSubmitted:
    """A trigger as a submission; `new_id` is used when the sender gave no correlation id."""
    workflow = header_text(message.headers, TRIGGER_WORKFLOW_HEADER)
    if not workflow:
        raise TriggerError(
            f"trigger has no '{TRIGGER_WORKFLOW_HEADER}' header; set it to the workflow's name"
        )
    if len(message.body) > max_bytes:
        raise TriggerError(f"trigger body is {len(message.body)} bytes; the limit is {max_bytes}")
    try:
        payload = decode_json(message.body, "trigger") if message.body.strip() else {}
    except ReplyError as exc:
        raise TriggerError(str(exc)) from None
    return JobSubmitted(
        job_id=message.correlation_id or new_id,
        workflow=workflow,
        payload=payload,
        at=at,
        reply_to=message.reply_to or None,
    )
