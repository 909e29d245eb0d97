"""Dead letters: a message that cannot be processed at all is kept, with the reason, not dropped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aio_pika import DeliveryMode, Message
from aio_pika.abc import AbstractIncomingMessage
from pamqp import encode

__all__ = [
    "HEADER_DEAD_REASON",
    "HEADER_DEAD_FROM",
    "HEADER_DEAD_AT",
    "HEADER_DEAD_DROPPED",
    "copy_message",
    "dead_letter",
    "dead_letter_headers",
]

HEADER_DEAD_REASON = "x-dead-reason"
HEADER_DEAD_FROM = "x-dead-from"
HEADER_DEAD_AT = "x-dead-at"  # Unix seconds: when the manager put it there, to show its age
HEADER_DEAD_DROPPED = "x-dead-dropped-headers"  # original headers too big to keep, by name

# A message's properties and headers travel in one AMQP frame (RabbitMQ's frame_max, 128 KiB
# by default): a copy that adds the reason to a message whose headers nearly fill it would
# make the broker close the whole connection, and the message come back again and again. So
# the reason is cut, and the original headers kept only up to a budget, largest ones dropped.
_REASON_CHARS = 2_000
_KEPT_HEADERS_BYTES = 64 * 1024
_NAMES_CHARS = 1_000


def copy_message(message: AbstractIncomingMessage, headers: dict[str, Any]) -> Message:
    """`message` with its original properties (persistent), carrying `headers` instead."""
    return Message(
        message.body,
        headers=headers,
        content_type=message.content_type,
        content_encoding=message.content_encoding,
        delivery_mode=DeliveryMode.PERSISTENT,
        priority=message.priority,
        correlation_id=message.correlation_id,
        reply_to=message.reply_to,
        message_id=message.message_id,
        timestamp=message.timestamp,
        type=message.type,
        app_id=message.app_id,
    )  # no user_id: the broker checks it against the publisher, i.e. us; no expiration: kept


def dead_letter_headers(
    headers: Mapping[str, Any] | None, reason: str, source_queue: str, at: float
) -> dict[str, Any]:
    """A message's headers plus why it is a dead letter, the queue it came from and when.

    The reason is cut to 2,000 characters; original headers beyond 64 KiB (encoded) are left
    out, largest first, and named in `x-dead-dropped-headers`: the copy must fit one frame.
    """
    if len(reason) > _REASON_CHARS:
        reason = f"{reason[:_REASON_CHARS]}... (cut: {len(reason)} characters in all)"
    kept, dropped = _within_budget(dict(headers or {}))
    extra = {HEADER_DEAD_DROPPED: _names(dropped)} if dropped else {}
    return {
        **kept,
        HEADER_DEAD_REASON: reason,
        HEADER_DEAD_FROM: source_queue,
        HEADER_DEAD_AT: round(at, 3),
        **extra,
    }


def _within_budget(headers: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The headers that fit `_KEPT_HEADERS_BYTES` together, smallest first, and the names of
    those that do not (in their order)."""
    sizes = {name: _encoded_size(name, value) for name, value in headers.items()}
    if sum(sizes.values()) <= _KEPT_HEADERS_BYTES:
        return headers, []
    left = _KEPT_HEADERS_BYTES
    keep: set[str] = set()
    for name in sorted(sizes, key=sizes.__getitem__):
        if sizes[name] > left:
            break
        keep.add(name)
        left -= sizes[name]
    kept = {name: value for name, value in headers.items() if name in keep}
    return kept, [name for name in headers if name not in keep]


def _encoded_size(name: str, value: Any) -> int:
    """Bytes `name: value` takes in an AMQP field table (a value it cannot encode: no room)."""
    try:
        return len(encode.field_table({name: value}))
    except (TypeError, ValueError):
        return _KEPT_HEADERS_BYTES + 1


def _names(names: list[str]) -> str:
    text = ", ".join(name[:100] for name in names)
    return text if len(text) <= _NAMES_CHARS else text[:_NAMES_CHARS] + "..."


def dead_letter(
    message: AbstractIncomingMessage, reason: str, source_queue: str, at: float
) -> Message:
    """A copy of `message` with its original properties, plus why, where from and when."""
    return copy_message(message, dead_letter_headers(message.headers, reason, source_queue, at))
