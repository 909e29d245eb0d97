"""Deliveries assembled as their frames arrive, without a trip through the channel's reader.

aiormq's connection hands every frame to its channel through a queue; the channel's own task
takes each one out, and for a delivery awaits the next two (header, body) the same way before
it starts the consumer. The manager consumes one reply per worker step, so that queue and task
cost about a tenth of its event loop's time per step (bench/README.md). `DeliveryTap` takes the
channel's place at that queue: a delivery's frames are put together where the connection puts
them, and the consumer starts at once, as aiormq would start it (a task of the channel's, so
closing the channel cancels it). Every other frame, and the content of a returned message, goes
on to the channel's reader unchanged and in order.

Like `framing`, it uses aiormq's channel from the inside (its frame queue, consumers and task
store), so pyproject.toml pins aiormq to the series it was written against;
`tests/integration/transport/test_reading.py` checks it against the real broker.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiormq.abc import DeliveredMessage
from pamqp import commands as spec
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

__all__ = ["DeliveryTap", "tap"]


@dataclass(slots=True)
class _Partial:
    """A delivery whose frames are still coming: its method, then header, then body parts."""

    deliver: spec.Basic.Deliver
    header: ContentHeader | None = None
    parts: list[bytes] = field(default_factory=list)
    size: int = 0


class DeliveryTap:
    """The frame queue of one aiormq channel, with deliveries taken out and started at once.

    Keeps the channel's own queue (its reader may be waiting on it) for every other frame.
    """

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self._queue: asyncio.Queue[Any] = channel.frames
        self._partial: _Partial | None = None

    # The queue's side the channel's reader uses.
    async def get(self) -> Any:
        """The next frame that is not part of a delivery (the channel's reader's call)."""
        return await self._queue.get()

    def task_done(self) -> None:
        """As `asyncio.Queue.task_done`, for the channel's reader."""
        self._queue.task_done()

    # The connection's side.
    async def put(self, item: tuple[int, Any]) -> None:
        """A frame for this channel (the connection's call): kept if part of a delivery."""
        if not self._take(item[1]):
            await self._queue.put(item)

    def _take(self, frame: Any) -> bool:
        """Whether `frame` belongs to a delivery (and was used); it starts the consumer when it
        completes one. A frame out of order goes to the channel, which reports it."""
        partial = self._partial
        if partial is None:
            if isinstance(frame, spec.Basic.Deliver):
                self._partial = _Partial(frame)
                return True
            return False
        if partial.header is None:
            if not isinstance(frame, ContentHeader):
                self._partial = None
                return False
            partial.header = frame
            if frame.body_size == 0:
                self._complete(partial, b"")
            return True
        if not isinstance(frame, ContentBody):
            self._partial = None
            return False
        partial.parts.append(frame.value)
        partial.size += len(frame.value)
        if partial.size >= partial.header.body_size:
            body = partial.parts[0] if len(partial.parts) == 1 else b"".join(partial.parts)
            self._complete(partial, body)
        return True

    def _complete(self, partial: _Partial, body: bytes) -> None:
        self._partial = None
        assert partial.header is not None
        channel = self._channel
        message = DeliveredMessage(
            delivery=partial.deliver, header=partial.header, body=body, channel=channel
        )
        consumer = channel.consumers.get(partial.deliver.consumer_tag)
        if consumer is None:
            return  # as aiormq does: a consumer cancelled meanwhile, the message redelivered
        task = channel.create_task(consumer(message))
        task.add_done_callback(channel._on_consumer_done)


def tap(channel: Any) -> None:
    """Put a `DeliveryTap` on aiormq `channel` (once: a tapped channel is left as it is)."""
    if not isinstance(channel.frames, DeliveryTap):
        channel.frames = DeliveryTap(channel)
