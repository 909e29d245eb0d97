"""Dead letters: a message that cannot be processed at all is kept, with the reason, not dropped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aio_pika import DeliveryMode, Message
from aio_pika.abc import AbstractIncomingMessage

__all__ = [
    "HEADER_DEAD_REASON",
    "HEADER_DEAD_FROM",
    "HEADER_DEAD_AT",
    "copy_message",
    "dead_letter",
    "dead_letter_headers",
]

HEADER_DEAD_REASON = "x-dead-reason"
HEADER_DEAD_FROM = "x-dead-from"
HEADER_DEAD_AT = "x-dead-at"  # Unix seconds: when the manager put it there, to show its age


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
    """A message's headers plus why it is a dead letter, the queue it came from and when."""
    return {
        **(headers or {}),
        HEADER_DEAD_REASON: reason,
        HEADER_DEAD_FROM: source_queue,
        HEADER_DEAD_AT: round(at, 3),
    }


def dead_letter(
    message: AbstractIncomingMessage, reason: str, source_queue: str, at: float
) -> Message:
    """A copy of `message` with its original properties, plus why, where from and when."""
    return copy_message(message, dead_letter_headers(message.headers, reason, source_queue, at))
