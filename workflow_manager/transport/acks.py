"""Acking deliveries in batches: one `basic.ack(multiple=True)` per loop tick where possible.

Every reply costs the manager an ack: a frame, a socket write and a broker round of work. Acks
that become due in the same loop tick go out together: a single multiple-ack covers the run
of consecutive delivery tags that are all due, and tags above one still in hand are acked one
by one, so a multiple-ack never covers a message the manager has not finished with.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["AckWindow", "Acker", "Acked"]

log = logging.getLogger(__name__)


class Acked(Protocol):
    """What acking a delivery needs of it: its channel and its tag there (aiormq's
    `DeliveredMessage` has both)."""

    @property
    def channel(self) -> Any: ...

    @property
    def delivery_tag(self) -> int | None: ...


class AckWindow:
    """One channel's deliveries in hand, and which acks settle the due ones. Pure."""

    def __init__(self) -> None:
        self._due: dict[int, bool] = {}  # delivery tag -> may be acked now
        self._order: list[int] = []  # heap of the tags in `_due` (and some already settled)

    def __len__(self) -> int:
        return len(self._due)

    @property
    def due_count(self) -> int:
        """Deliveries done with and not yet acked."""
        return sum(self._due.values())

    def received(self, tag: int) -> None:
        """A delivery arrived; it is in hand until `due(tag)`."""
        self._due[tag] = False
        heapq.heappush(self._order, tag)

    def due(self, tag: int) -> None:
        """The delivery is done with: ack it at the next `take()`."""
        if tag in self._due:
            self._due[tag] = True

    def forget(self, tag: int) -> None:
        """The delivery was settled otherwise (given back): neither in hand nor due."""
        self._due.pop(tag, None)

    def take(self) -> tuple[int, list[int]]:
        """(tag for one multiple-ack, or 0; tags to ack one by one), settling every due tag."""
        up_to = 0
        while self._order:
            tag = self._order[0]
            state = self._due.get(tag)
            if state is False:
                break  # still in hand: a multiple-ack must stop below it
            heapq.heappop(self._order)
            if state is True:
                del self._due[tag]
                up_to = tag
        singles = sorted(tag for tag, state in self._due.items() if state)
        for tag in singles:
            del self._due[tag]
        if len(self._order) > 2 * len(self._due) + 1024:
            # Singles stay in the heap until they reach its top: behind a delivery held for
            # long, rebuild it so it does not grow with every ack.
            self._order = list(self._due)
            heapq.heapify(self._order)
        return up_to, singles


class Acker:
    """Collects due acks per channel and sends them once per loop tick."""

    def __init__(self, on_dropped: Callable[[int], None] = lambda _count: None) -> None:
        # Acks that cannot be sent (their channel is gone) are counted, not logged one by one:
        # the broker delivers those messages again, and the engine drops the repeats.
        self._on_dropped = on_dropped
        self._windows: dict[Any, AckWindow] = {}  # aiormq channel -> its window
        self._scheduled = False
        self._last: asyncio.Task[None] | None = None  # the latest batch of acks being sent

    def received(self, message: Acked) -> None:
        """Call as each delivery starts being handled (in delivery order)."""
        window = self._windows.get(message.channel)
        if window is None:
            window = self._windows[message.channel] = AckWindow()
        window.received(_tag(message))

    def ack(self, message: Acked) -> None:
        """Ack `message` at the end of this loop tick, together with the others due."""
        window = self._windows.get(message.channel)
        if window is None:
            return  # its channel is gone: the broker redelivers it, the engine drops the repeat
        window.due(_tag(message))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def requeue(self, message: Acked) -> None:
        """Give `message` back to its queue: a nack with requeue, sent after the acks due now
        and before any later ones (which must not cover it first)."""
        window = self._windows.get(message.channel)
        if window is None:
            return  # its channel is gone: the broker requeued it already
        tag = _tag(message)
        self.flush()
        self._last = asyncio.get_running_loop().create_task(
            _give_back(self._last, message.channel, tag, window)
        )

    def flush(self) -> None:
        """Send every due ack now."""
        self._scheduled = False
        for channel, window in list(self._windows.items()):
            if channel.is_closed:
                del self._windows[channel]  # its deliveries come again on the new channel
                if window.due_count:
                    self._on_dropped(window.due_count)
                continue
            up_to, singles = window.take()
            if up_to or singles:
                # Each batch waits for the one before: a single ack overtaken by a later
                # multiple-ack covering the same tag would be an unknown tag, a channel error.
                self._last = asyncio.get_running_loop().create_task(
                    _send(self._last, channel, up_to, singles, self._on_dropped)
                )

    async def drain(self) -> None:
        """Send what is due and wait until every ack has been written."""
        self.flush()
        if self._last is not None:
            await asyncio.wait([self._last])


def _tag(message: Acked) -> int:
    tag = message.delivery_tag
    assert tag is not None  # only no_ack consumers get messages without one
    return tag


async def _give_back(
    previous: asyncio.Task[None] | None, channel: Any, tag: int, window: AckWindow
) -> None:
    if previous is not None:
        await asyncio.wait([previous])
    try:
        await channel.basic_nack(tag, multiple=False, requeue=True)
    except Exception as exc:  # noqa: BLE001 - a closed channel requeues it anyway
        log.debug("requeue failed (the broker will deliver it again): %s", exc)
    window.forget(tag)  # settled: a later multiple-ack may pass over it


async def _send(
    previous: asyncio.Task[None] | None,
    channel: Any,
    up_to: int,
    singles: list[int],
    on_dropped: Callable[[int], None],
) -> None:
    if previous is not None:
        await asyncio.wait([previous])
    try:
        if up_to:
            await channel.basic_ack(up_to, multiple=True)
        for tag in singles:
            await channel.basic_ack(tag)
    except Exception as exc:  # noqa: BLE001 - a closed channel redelivers; the engine dedups
        log.debug("ack failed (the broker will deliver those messages again): %s", exc)
        on_dropped(len(singles) + (1 if up_to else 0))
