"""Publishing in batches: every message published in one loop tick goes out in one socket write.

aiormq's `basic_publish` costs about 60 µs of CPU per message (bench/README.md, "Where the
time goes"): a coroutine with two context managers, a lock, a drain future and a place in the
connection's write queue, which holds 10 frames, so hundreds of publishes in flight queue up
behind one another. The manager publishes one or more messages for most deliveries it handles,
many in the same loop tick. `Framer` collects the messages of one tick and, in one task, under
the channel's lock (so delivery tags stay in the order the broker sees them), numbers them,
registers their confirmations exactly as `basic_publish` does, and hands their frames (packed
by `wire`) to the connection as one write: about 16 µs per message.

It uses aiormq's channel from the inside (its lock, delivery tag, confirmation futures, write
queue and frame size: the same state `basic_publish` uses), so pyproject.toml pins aiormq
to the series it was written against, and `tests/integration/transport/test_framing.py` checks
confirms, returns and a closed channel against the real broker.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiormq
from aiormq.abc import ChannelFrame

from workflow_manager.transport.message import Outbound
from workflow_manager.transport.wire import publish_frames

__all__ = ["Framer"]

_PERSISTENT = 2  # delivery mode: written to disk by the broker


@dataclass(slots=True)
class _Publish:
    """One message waiting for the next batch, and its caller's future."""

    message: Outbound
    done: asyncio.Future[Any]


class Framer:
    """Publishes on one channel in batches of a loop tick; see the module's docstring.

    `underlay()` returns the channel's current aiormq channel (a robust channel's changes
    after a reconnect). With publisher confirms, each message's future resolves when the
    broker confirms it, or fails with what `basic_publish` would raise (a `PublishError` for a
    returned message, the channel's error when it closes) as `errors(exc, message)` makes it;
    without confirms, once it is written.
    """

    def __init__(
        self,
        underlay: Callable[[], Awaitable[aiormq.abc.AbstractChannel]],
        errors: Callable[[BaseException, Outbound], BaseException] = lambda exc, _: exc,
    ) -> None:
        self._underlay = underlay
        self._errors = errors
        self._pending: list[_Publish] = []
        self._flushing: asyncio.Task[None] | None = None

    def publish(self, message: Outbound) -> asyncio.Future[Any]:
        """Queue `message` for this tick's batch (persistent JSON, mandatory on the default
        exchange); the future says how its publish ended."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._pending.append(_Publish(message, done))
        if self._flushing is None:
            self._flushing = loop.create_task(self._flush())
        return done

    async def _flush(self) -> None:
        batch: list[_Publish] | None = None
        try:
            channel: Any = await self._underlay()
            async with channel.lock:
                batch, self._pending, self._flushing = self._pending, [], None
                await self._write(channel, [p for p in batch if not p.done.done()])
        except BaseException as exc:
            if batch is None:  # failed before taking the batch: later publishes start anew
                batch, self._pending, self._flushing = self._pending, [], None
            for publish in batch:
                if not publish.done.done():
                    publish.done.set_exception(self._errors(_as_error(exc), publish.message))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _write(self, channel: Any, batch: list[_Publish]) -> None:
        """Number, register and frame `batch` as one write (the channel's lock held)."""
        if not batch:
            return
        if channel.is_closed:
            raise aiormq.exceptions.ChannelInvalidStateError(f"{channel!r} closed")
        first_tag = channel.delivery_tag
        frames = self._number(channel, batch)
        if not frames:
            return
        try:
            # One place in the connection's write queue (it holds ten) for the whole batch.
            await channel.write_queue.put(ChannelFrame(b"".join(frames), should_close=False))
        except BaseException:
            # Not handed to the connection: the broker never saw these tags; give them back
            # (the lock is still held, so no publish took a later one).
            for tag in range(first_tag + 1, channel.delivery_tag + 1):
                confirmation = channel.confirmations.pop(tag, None)
                if confirmation is not None and not confirmation.done():
                    confirmation.cancel()
            channel.delivery_tag = first_tag
            raise
        if not channel.publisher_confirms:
            for publish in batch:
                if not publish.done.done():
                    publish.done.set_result(None)

    def _number(self, channel: Any, batch: list[_Publish]) -> list[bytes]:
        """Each message's frames, its delivery tag taken and its confirmation registered."""
        number, frame_max_body = channel.number, channel.max_content_size
        frames: list[bytes] = []
        for publish in batch:
            message = publish.message
            # A returned message is matched to its publish by its id, as in basic_publish.
            message_id = message.message_id or uuid.uuid4().hex
            try:
                frames.append(_frames(message, message_id, number, frame_max_body))
            except Exception as exc:
                # This message alone cannot be framed (a name over 255 bytes, a header value
                # AMQP has no type for): it fails alone, numbered nothing, as basic_publish
                # would fail before taking a tag; the rest of the batch goes on.
                publish.done.set_exception(self._errors(exc, message))
                continue
            if channel.publisher_confirms:
                channel.delivery_tag += 1
                tag = channel.delivery_tag
                # The channel's own future (rejected when the channel closes), passed on.
                confirmation = channel.create_future()
                channel.confirmations[tag] = confirmation
                channel.message_id_delivery_tag[message_id] = tag
                confirmation.add_done_callback(
                    _pass_on(publish, channel, tag, message_id, self._errors)
                )
        return frames


def _frames(message: Outbound, message_id: str, channel: int, frame_max_body: int) -> bytes:
    """`message`'s frames: persistent JSON, mandatory on the default exchange."""
    return publish_frames(
        channel,
        message.body,
        exchange=message.exchange,
        routing_key=message.queue,
        mandatory=not message.exchange,
        frame_max_body=frame_max_body,
        content_type="application/json",
        headers=message.headers,
        delivery_mode=_PERSISTENT,
        priority=message.priority or None,
        correlation_id=message.correlation_id,
        reply_to=message.reply_to,
        message_id=message_id,
    )


def _pass_on(
    publish: _Publish,
    channel: Any,
    tag: int,
    message_id: str,
    errors: Callable[[BaseException, Outbound], BaseException],
) -> Callable[[asyncio.Future[Any]], None]:
    """The channel's confirmation future's outcome, passed to the caller's future."""

    def settle(confirmation: asyncio.Future[Any]) -> None:
        if channel.message_id_delivery_tag.get(message_id) == tag:
            del channel.message_id_delivery_tag[message_id]
        done = publish.done
        if done.done():
            return
        if confirmation.cancelled():
            failure = aiormq.exceptions.ChannelInvalidStateError("publish cancelled")
            done.set_exception(errors(failure, publish.message))
        elif (exc := confirmation.exception()) is not None:
            done.set_exception(errors(exc, publish.message))
        else:
            done.set_result(None)

    return settle


def _as_error(exc: BaseException) -> BaseException:
    """What a batch that could not be written raises for each of its callers."""
    if isinstance(exc, asyncio.CancelledError):
        return aiormq.exceptions.ChannelInvalidStateError("publishing was cancelled")
    return exc
