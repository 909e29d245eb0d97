"""Dead letters: list what `<queue>.dead` holds without taking it, and replay it where it came from.

Each letter has an id of its own (`DeadLetter.id`): a digest of the message as the manager
dead-lettered it (body, properties, headers with the reason and time), so a replay can name
exactly one letter even when several share a correlation id. Listing can keep only the start
of each body (`preview_bytes`), saying so (`body_bytes`); a replay always sends the whole one.

aio-pika and aiormq exceptions stop here and become `BrokerError`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue
from aiormq.exceptions import ChannelNotFoundEntity

from workflow_manager.errors import BrokerError
from workflow_manager.textline import body_preview, iso_utc, one_line
from workflow_manager.transport import (
    DEFAULT_QUEUE,
    HEADER_DEAD_AT,
    HEADER_DEAD_FROM,
    HEADER_DEAD_REASON,
    copy_message,
    dead_letter_queue,
    header_text,
    mask_url,
)
from workflow_manager.transport.errors import AMQP_ERRORS, broker_errors

__all__ = [
    "DeadLetter",
    "DeadLetterPage",
    "read_dead_letters",
    "DeadLetterQueue",
    "dead_at",
    "letter_id",
    "list_dead_letters",
    "replay_dead_letters",
    "format_dead_letters",
    "describe_headers",
]

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT_S = 10.0
_GET_TIMEOUT_S = 10.0
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


def _letter(message: AbstractIncomingMessage, preview_bytes: int | None = None) -> DeadLetter:
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


@contextlib.asynccontextmanager
async def _dead_queue(
    amqp_url: str, name: str
) -> AsyncIterator[tuple[AbstractChannel, AbstractQueue]]:
    """A confirming channel and the existing queue `name`; aio-pika errors become BrokerError."""
    with broker_errors(f"cannot connect to RabbitMQ at {mask_url(amqp_url)}"):
        connection = await aio_pika.connect(amqp_url, timeout=_CONNECT_TIMEOUT_S)
    try:
        async with connection:
            channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
            try:
                queue = await channel.declare_queue(name, passive=True)
            except ChannelNotFoundEntity as exc:
                raise BrokerError(
                    f"no queue '{name}' on RabbitMQ: the manager declares it when it starts; "
                    "check --queue (the manager's queue, not the dead-letter one)"
                ) from exc
            yield channel, queue
    except BrokerError:
        raise
    except AMQP_ERRORS as exc:
        raise BrokerError(
            f"RabbitMQ failed while handling the dead letters in '{name}': {exc}"
        ) from exc


async def _get(queue: AbstractQueue) -> AbstractIncomingMessage | None:
    """The next message, unacked (it stays the broker's until acked or nacked), or None."""
    return await queue.get(no_ack=False, fail=False, timeout=_GET_TIMEOUT_S)


async def _put_back(last: AbstractIncomingMessage | None) -> None:
    """Requeue `last` and every unacked message before it, in their places; none is lost."""
    if last is None:
        return
    try:
        # nack, not reject: RabbitMQ 4 does not count a nack against a quorum queue's
        # delivery-limit, so listing never wears a dead letter out.
        await last.nack(multiple=True, requeue=True)
    except AMQP_ERRORS as exc:  # the channel is gone: the broker requeues them itself
        log.debug("requeueing dead letters failed (the broker will): %s", exc)


async def list_dead_letters(
    amqp_url: str, queue: str = DEFAULT_QUEUE, limit: int = 100
) -> list[DeadLetter]:
    """The first `limit` dead letters of `<queue>.dead`, oldest first; they stay in the queue."""
    return (await read_dead_letters(amqp_url, queue, limit)).letters


async def read_dead_letters(
    amqp_url: str,
    queue: str = DEFAULT_QUEUE,
    limit: int = 100,
    offset: int = 0,
    preview_bytes: int | None = None,
) -> DeadLetterPage:
    """`limit` dead letters of `<queue>.dead` from the `offset`-th on, oldest first (they stay
    in the queue); with `preview_bytes`, only the start of each body is kept.

    A queue cannot be read from the middle: the letters before `offset` are read too, one at
    a time, and dropped.
    """
    if limit < 1 or offset < 0:
        raise ValueError(f"limit must be at least 1 and offset at least 0, got {limit}, {offset}")
    letters: list[DeadLetter] = []
    async with _dead_queue(amqp_url, dead_letter_queue(queue)) as (_, dead):
        total = dead.declaration_result.message_count or 0
        last = None
        try:
            # Held unacked until the end, so each get returns the next one, not the same again.
            for index in range(min(offset + limit, total)):
                if (message := await _get(dead)) is None:
                    break
                last = message
                if index >= offset:
                    letters.append(_letter(message, preview_bytes))
        finally:
            await _put_back(last)
    return DeadLetterPage(letters, offset, total)


async def replay_dead_letters(
    amqp_url: str,
    queue: str = DEFAULT_QUEUE,
    *,
    correlation_id: str | None = None,
    all: bool = False,
    letter: str | None = None,
) -> int:
    """Publish matching dead letters back to the queue they came from, then remove them.

    Either `correlation_id` (every dead letter with it), `letter` (the one letter with this id,
    `DeadLetter.id`) or `all=True`. Each is confirmed by the broker before it is acked off the
    dead queue; returns how many were replayed.
    """
    if [all, correlation_id is not None, letter is not None].count(True) != 1:
        raise ValueError("pass one of correlation_id, letter or all=True")
    name = dead_letter_queue(queue)
    replayed = 0
    async with _dead_queue(amqp_url, name) as (channel, dead):
        kept = message = None
        try:
            # Only those there now: a replayed message dead-lettered again waits for next time.
            for _ in range(dead.declaration_result.message_count or 0):
                if (message := await _get(dead)) is None:
                    break
                wanted = all or (
                    message.correlation_id == correlation_id
                    if letter is None
                    else not replayed and letter_id(message) == letter
                )
                if wanted and await _replay(channel, message, name, replayed):
                    replayed += 1
                    if letter is not None:
                        break  # exactly one
                else:
                    kept = message
        finally:
            # The message in hand when a replay failed is unacked too: it goes back as well.
            await _put_back(message if message is not None and not message.processed else kept)
    return replayed


async def _replay(
    channel: AbstractChannel, message: AbstractIncomingMessage, dead: str, done: int
) -> bool:
    """Publish one dead letter to its source queue and ack it; False if it names no source."""
    letter = _letter(message)
    if letter.source_queue is None:
        log.warning(
            "dead letter %s in '%s' has no x-dead-from or x-death header to say where it came "
            "from; left there (publish it by hand)",
            letter.correlation_id,
            dead,
        )
        return False
    with broker_errors(
        f"RabbitMQ did not confirm replaying dead letter {letter.correlation_id!r} to "
        f"'{letter.source_queue}' (it stays in '{dead}'; {done} replayed before it)",
        returned=f"cannot replay dead letter {letter.correlation_id!r}: no queue "
        f"'{letter.source_queue}' exists (it stays in '{dead}'; {done} replayed before it)",
    ):
        await channel.default_exchange.publish(
            copy_message(message, letter.headers), letter.source_queue, mandatory=True
        )
    await message.ack()
    return True


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


@dataclass(frozen=True, slots=True)
class DeadLetterQueue:
    """One manager's dead-letter queue (`<queue>.dead`), for the API: list it, replay from it."""

    amqp_url: str
    queue: str = DEFAULT_QUEUE

    def __repr__(self) -> str:
        return f"<DeadLetterQueue {dead_letter_queue(self.queue)} on {mask_url(self.amqp_url)}>"

    async def letters(self, limit: int = 100) -> list[DeadLetter]:
        """The first `limit` dead letters, oldest first; they stay in the queue."""
        return await list_dead_letters(self.amqp_url, self.queue, limit)

    async def page(self, limit: int, offset: int, preview_bytes: int) -> DeadLetterPage:
        """`limit` dead letters from the `offset`-th on, each body cut to `preview_bytes`."""
        return await read_dead_letters(self.amqp_url, self.queue, limit, offset, preview_bytes)

    async def replay(
        self, correlation_id: str | None = None, *, all: bool = False, letter: str | None = None
    ) -> int:
        """Replay the dead letters with `correlation_id`, the one with id `letter`, or `all`;
        returns how many."""
        return await replay_dead_letters(
            self.amqp_url, self.queue, correlation_id=correlation_id, all=all, letter=letter
        )
