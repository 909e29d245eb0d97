"""Dead letters: list what `<queue>.dead` holds without taking it, and replay it where it came from.

Each letter has an id of its own (`workflow_manager.letters`, which reads a message into a
`DeadLetter`), so a replay can name exactly one letter even when several share a correlation
id. Listing can keep only the start of each body (`preview_bytes`), saying so (`body_bytes`);
a replay always sends the whole one.

aio-pika and aiormq exceptions stop here and become `BrokerError`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue
from aiormq.exceptions import ChannelNotFoundEntity

from workflow_manager.errors import BrokerError
from workflow_manager.letters import DeadLetter, DeadLetterPage, letter_id, read_letter
from workflow_manager.transport import (
    DEFAULT_QUEUE,
    copy_message,
    dead_letter_queue,
    mask_url,
)
from workflow_manager.transport.errors import AMQP_ERRORS, broker_errors

__all__ = ["read_dead_letters", "DeadLetterQueue", "list_dead_letters", "replay_dead_letters"]

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT_S = 10.0
_GET_TIMEOUT_S = 10.0


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
                    letters.append(read_letter(message, preview_bytes))
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
    letter = read_letter(message)
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
