"""A dead letter as the manager shows it: read from a message of `<queue>.dead`, its headers
described, and a table of several for the CLI (pure: the broker side is
`workflow_manager.deadletters`).

Each letter has an id of its own (`DeadLetter.id`): a digest of the message as the manager
dead-lettered it (body, properties, headers with the reason and time), so a replay can name
exactly one letter even when several share a correlation id.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from aio_pika.abc import AbstractIncomingMessage

from workflow_manager.textline import body_preview, iso_utc, one_line
from workflow_manager.transport import (
    HEADER_DEAD_AT,
    HEADER_DEAD_FROM,
    HEADER_DEAD_REASON,
    header_text,
)

__all__ = [
    "DeadLetter",
    "DeadLetterPage",
    "dead_at",
    "letter_id",
    "read_letter",
    "format_dead_letters",
    "describe_headers",
]

# Set by RabbitMQ itself when it dead-letters (a policy's delivery-limit or TTL) or redelivers:
# shown as `deaths` / `delivery_count`, and not published again by a replay.
_BROKER_HEADERS = ("x-death", "x-delivery-count")
_BROKER_HEADER_PREFIXES = ("x-first-death-", "x-last-death-")
_REASON_CHARS = 60
_BODY_CHARS = 60


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One message of the dead-letter queue: why it is there, where from, and the message itself.

    `headers` are the message's own, as a replay publishes them (without `x-dead-*` and the
    broker's `x-death` bookkeeping); `deaths` counts RabbitMQ's own dead-letterings (`x-death`)
    and `delivery_count` its redeliveries (`x-delivery-count`, quorum queues), when it set them.
    """

    reason: str | None
    source_queue: str | None
    correlation_id: str | None
    reply_to: str | None
    headers: dict[str, Any]
    body: bytes
    message_id: str | None = None
    deaths: int | None = None
    delivery_count: int | None = None
    dead_at: float | None = None  # Unix seconds; None for a letter from before it was kept
    id: str = ""  # this letter's own id (module docstring)
    body_bytes: int | None = None  # the whole body's size, when `body` holds only its start

    def __repr__(self) -> str:
        own = f" {self.id}" if self.id else ""
        return f"<DeadLetter{own} {self.correlation_id} from {self.source_queue}: {self.reason!r}>"

    @property
    def body_truncated(self) -> bool:
        """True when `body` is only the start of the message's body."""
        return self.body_bytes is not None and self.body_bytes > len(self.body)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; the body as text when it is UTF-8, else as `body_base64`, with
        `body_bytes` (the whole body's size) and `body_truncated` (only its start is here)."""
        data: dict[str, Any] = {
            "id": self.id,
            "reason": self.reason,
            "source_queue": self.source_queue,
            "correlation_id": self.correlation_id,
            "reply_to": self.reply_to,
            "message_id": self.message_id,
            "headers": _jsonable(self.headers),
            "deaths": self.deaths,
            "delivery_count": self.delivery_count,
        }
        if self.dead_at is not None:
            data["dead_at"] = iso_utc(self.dead_at)
        try:
            # A preview may end inside a character: that character is left out.
            data["body"] = self.body.decode("utf-8", "ignore" if self.body_truncated else "strict")
        except UnicodeDecodeError:
            data["body_base64"] = base64.b64encode(self.body).decode("ascii")
        data["body_bytes"] = len(self.body) if self.body_bytes is None else self.body_bytes
        data["body_truncated"] = self.body_truncated
        return data


@dataclass(frozen=True, slots=True)
class DeadLetterPage:
    """Some of the dead letters, from `offset` on (oldest first), and how many there are."""

    letters: list[DeadLetter]
    offset: int
    total: int

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts; None when this one reaches the end."""
        end = self.offset + len(self.letters)
        return end if end < self.total and self.letters else None


def _is_broker_header(key: str) -> bool:
    return key in _BROKER_HEADERS or key.startswith(_BROKER_HEADER_PREFIXES)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def describe_headers(
    headers: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], str | None, str | None, int | None]:
    """Split a dead letter's headers: (its own headers, reason, source queue, RabbitMQ deaths).

    The manager's `x-dead-reason` / `x-dead-from` come first; for a message RabbitMQ
    dead-lettered by a policy, its `x-death` (or `x-last-death-*`) headers say the same.
    """
    headers = dict(headers or {})
    reason = header_text(headers, HEADER_DEAD_REASON)
    source = header_text(headers, HEADER_DEAD_FROM)
    deaths = [d for d in headers.get("x-death") or [] if isinstance(d, Mapping)]
    newest = deaths[0] if deaths else {}  # RabbitMQ keeps the latest dead-lettering first
    if reason is None:
        why = header_text(newest, "reason") or header_text(headers, "x-last-death-reason")
        reason = f"dead-lettered by RabbitMQ: {why}" if why else None
    if source is None:
        source = header_text(newest, "queue") or header_text(headers, "x-last-death-queue")
    counts = [_int(d.get("count")) or 0 for d in deaths]
    own = {
        key: value
        for key, value in headers.items()
        if key not in (HEADER_DEAD_REASON, HEADER_DEAD_FROM, HEADER_DEAD_AT)
        and not _is_broker_header(key)
    }
    return own, reason, source, (sum(counts) if counts else None)


def letter_id(message: AbstractIncomingMessage) -> str:
    """A dead letter's own id: a digest of its body, properties and headers (but for the
    broker's bookkeeping, which a listing's requeue may change). Equal letters share it, and
    are interchangeable."""
    headers = {k: v for k, v in (message.headers or {}).items() if not _is_broker_header(k)}
    properties = [message.correlation_id, message.message_id, message.reply_to, message.type,
                  message.content_type, _jsonable(headers)]  # fmt: skip
    digest = hashlib.sha256(json.dumps(properties, sort_keys=True, default=str).encode())
    digest.update(b"\0")
    digest.update(message.body)
    return digest.hexdigest()[:16]


def read_letter(message: AbstractIncomingMessage, preview_bytes: int | None = None) -> DeadLetter:
    """The letter `message` holds; with `preview_bytes`, only the start of its body."""
    own, reason, source, deaths = describe_headers(message.headers)
    body = bytes(message.body)
    size = len(body)
    if preview_bytes is not None and size > preview_bytes:
        body = body[:preview_bytes]
    return DeadLetter(
        reason=reason,
        source_queue=source,
        correlation_id=message.correlation_id,
        reply_to=message.reply_to,
        headers=own,
        body=body,
        message_id=message.message_id,
        deaths=deaths,
        delivery_count=_int((message.headers or {}).get("x-delivery-count")),
        dead_at=dead_at(message.headers or {}),
        id=letter_id(message),
        body_bytes=size if len(body) < size else None,
    )


def dead_at(headers: Mapping[str, Any]) -> float | None:
    """When the manager dead-lettered it (`x-dead-at`), else when RabbitMQ did (`x-death`)."""
    at = headers.get(HEADER_DEAD_AT)
    if isinstance(at, int | float | Decimal) and not isinstance(at, bool):
        return float(at)
    deaths = [d for d in headers.get("x-death") or [] if isinstance(d, Mapping)]
    when = deaths[0].get("time") if deaths else None
    return when.timestamp() if isinstance(when, datetime) else None


def _line(text: str | None, width: int) -> str:
    return "-" if text is None else one_line(text, width)


def _preview(body: bytes) -> str:
    return body_preview(body, _BODY_CHARS)


def format_dead_letters(letters: Sequence[DeadLetter]) -> str:
    """A table: letter id, reason, source queue, correlation id, body preview; "" when empty."""
    if not letters:
        return ""
    rows = [("ID", "REASON", "FROM", "CORRELATION ID", "BODY")]
    rows += [
        (
            letter.id or "-",
            _line(letter.reason, _REASON_CHARS),
            _line(letter.source_queue, 200),
            _line(letter.correlation_id, 200),
            _preview(letter.body),
        )
        for letter in letters
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    padded = [[v.ljust(w) for v, w in zip(row[:4], widths, strict=True)] for row in rows]
    lines = ["  ".join([*cells, row[4]]) for cells, row in zip(padded, rows, strict=True)]
    return "\n".join(line.rstrip() for line in lines)


def _jsonable(value: Any) -> Any:
    """AMQP header values (bytes, datetimes, decimals, nested tables) as JSON values."""
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
