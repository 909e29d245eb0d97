"""What the kit sends and sees, as plain data: requests, replies, observations, verdicts. Pure."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Status",
    "Verdict",
    "SentRequest",
    "Reply",
    "Exchange",
    "Batch",
    "RedeliveryObservation",
    "FailureObservation",
    "AckOrderObservation",
    "PayloadObservation",
    "header_text",
]


class Status(enum.Enum):
    """The outcome of one rule."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True)
class Verdict:
    """One rule's outcome; `reason` says what was seen (on PASS, what the rule checks)."""

    rule: str
    status: Status
    reason: str


@dataclass(frozen=True)
class SentRequest:
    """A request as the kit published it, with the manager's properties."""

    correlation_id: str
    message_id: str
    attempt: int
    headers: Mapping[str, Any]
    input: Mapping[str, Any]
    body: bytes = field(repr=False)


def header_text(value: object) -> str | None:
    """A header value as text (AMQP clients send strings as str or bytes); None when absent."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


@dataclass(frozen=True)
class Reply:
    """A message that reached one of the kit's reply queues.

    With --echo and a payload store, the kit reads back the references in the body: `resolved`
    is the body then (None when it held none), or `unresolved` says why one could not be read.
    """

    correlation_id: str | None
    content_type: str | None
    headers: Mapping[str, Any]
    body: bytes = field(repr=False)
    resolved: Any = field(default=None, repr=False)
    unresolved: str | None = None

    @property
    def error(self) -> str | None:
        """The `x-error` header as text, or None when the reply reports success."""
        return header_text(self.headers.get("x-error"))

    def output(self) -> tuple[Any, str | None]:
        """`(value, None)` for a JSON body (empty counts as {}), else `(None, what is wrong)`."""
        if not self.body.strip():
            return {}, None
        try:
            return json.loads(self.body.decode("utf-8")), None
        except UnicodeDecodeError as exc:
            return None, f"the body is not UTF-8 ({exc.reason} at byte {exc.start})"
        except ValueError as exc:
            return None, f"the body is not valid JSON ({exc}): {self.body[:60]!r}"


@dataclass(frozen=True)
class Exchange:
    """One request and the replies that came back for it within the timeout."""

    sent: SentRequest
    replies: tuple[Reply, ...]
    timeout_s: float


@dataclass(frozen=True)
class Batch:
    """Requests published all at once and every reply collected for them."""

    sent: tuple[SentRequest, ...]
    replies: tuple[Reply, ...]
    timeout_s: float


@dataclass(frozen=True)
class RedeliveryObservation:
    """A request answered once, then the same message made redelivered by the broker.

    `redelivered` is False when the kit could not take the copy back to requeue it itself.
    """

    first: Exchange
    redelivered: bool
    again: tuple[Reply, ...]


@dataclass(frozen=True)
class FailureObservation:
    """A request with the failing input; `requeued` when it came back to the worker's queue."""

    exchange: Exchange
    requeued: bool


@dataclass(frozen=True)
class AckOrderObservation:
    """A request whose reply the broker refused at first, then accepted.

    `refused`: the refused reply attempts (copies the reply queue dead-lettered to the kit);
    `replies`: what reached the reply queue once it accepted messages again.
    """

    sent: SentRequest
    refused: tuple[Reply, ...]
    replies: tuple[Reply, ...]
    timeout_s: float


@dataclass(frozen=True)
class PayloadObservation:
    """A request whose input held a reference to `value`, stored by the kit, and its reply."""

    exchange: Exchange
    value: Any = field(repr=False)
