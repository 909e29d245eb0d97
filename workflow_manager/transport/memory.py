"""An in-memory `Transport` for unit tests: queues are lists, nothing leaves the process.

Published messages are kept in order (`published`, `sent_to(queue)`); a test plays a worker
or a trigger sender with `deliver(...)`, which hands a message to the consumer of its queue.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from workflow_manager.errors import BrokerError, Unroutable
from workflow_manager.transport.deadletter import dead_letter_headers
from workflow_manager.transport.message import Delivery, Outbound
from workflow_manager.transport.protocol import Handler

__all__ = ["MemoryTransport"]


class MemoryTransport:
    """Declared queues, consumers and confirmed publishes, all in memory."""

    def __init__(self) -> None:
        self.declared: set[str] = set()
        self.exchanges: set[str] = set()
        self.published: list[Outbound] = []
        self.acked: list[Delivery] = []
        self.down_for_s: float | None = None
        self.held_counts: dict[str, int] = {}
        self._up = asyncio.Event()
        self._up.set()
        self.published_event = asyncio.Event()
        # A publish waits while this is clear (the broker "holds" confirms), for tests.
        self.confirming = asyncio.Event()
        self.confirming.set()
        # Set once a publish waits for `confirming`: tests await it to know one is in flight.
        self.holding = asyncio.Event()
        self._consumers: dict[str, Handler] = {}
        self.requeued: list[Delivery] = []
        self.closed = False
        self._on_restored: list[Callable[[], Awaitable[None]]] = []
        self._tag = 0

    def __repr__(self) -> str:
        return f"<MemoryTransport {len(self.declared)} queues {len(self.published)} published>"

    @property
    def connected(self) -> bool:
        """True unless a test set it False (a broker outage)."""
        return self._up.is_set()

    @connected.setter
    def connected(self, up: bool) -> None:
        if up:
            self._up.set()
        else:
            self._up.clear()

    async def wait_connected(self) -> None:
        """Return once `connected` is True again; BrokerError once closed, as the Broker."""
        if self.closed:
            raise BrokerError("the connection to RabbitMQ was closed")
        await self._up.wait()

    def held(self, kind: str, count: int = 1) -> None:
        """Count what an outage held back."""
        self.held_counts[kind] = self.held_counts.get(kind, 0) + count

    async def connect(self) -> None:
        """Nothing to connect to."""
        self.connected = True

    async def declare(self, queues: Iterable[str]) -> None:
        """Remember the queues as declared."""
        self.declared.update(queues)

    async def declare_exchange(self, name: str) -> None:
        """Remember the exchange as declared."""
        self.exchanges.add(name)

    async def consume(self, queue: str, handler: Handler) -> None:
        """Hand `deliver(queue, ...)` messages to `handler`."""
        self.declared.add(queue)
        self._consumers[queue] = handler

    def ack(self, delivery: Delivery) -> None:
        """Record the ack."""
        self.acked.append(delivery)

    async def publish(self, message: Outbound) -> None:
        """Keep the message (Unroutable for an undeclared queue), once `confirming` is set."""
        if not self.confirming.is_set():
            self.holding.set()
        await self.confirming.wait()
        if not self.connected:
            raise BrokerError(f"publishing to queue '{message.queue}' failed: not connected")
        if message.exchange:
            if message.exchange not in self.exchanges:
                raise BrokerError(f"no exchange '{message.exchange}' was declared")
        elif message.queue not in self.declared:
            raise Unroutable(f"no queue '{message.queue}' exists; the message came back")
        self.published.append(message)
        self.published_event.set()

    def send(self, message: Outbound) -> asyncio.Future[None]:
        """`publish` in a task of its own."""
        return asyncio.ensure_future(self.publish(message))

    def send_unconfirmed(self, message: Outbound) -> asyncio.Future[None]:
        """`publish_unconfirmed`, its outcome in a future."""
        return asyncio.ensure_future(self.publish_unconfirmed(message))

    async def publish_unconfirmed(self, message: Outbound) -> None:
        """Keep the message at once (no confirm to wait for); BrokerError when disconnected."""
        if not self.connected:
            raise BrokerError(f"publishing to exchange '{message.exchange}' failed: not connected")
        if message.exchange not in self.exchanges:
            raise BrokerError(f"no exchange '{message.exchange}' was declared")
        self.published.append(message)
        self.published_event.set()

    async def dead_letter(self, delivery: Delivery, queue: str, reason: str) -> None:
        """Publish a copy of `delivery` to `queue` with the dead-letter headers."""
        headers = dead_letter_headers(delivery.headers, reason, delivery.queue, time.time())
        await self.publish(
            Outbound(
                queue,
                delivery.body,
                delivery.correlation_id,
                delivery.reply_to,
                headers,
                delivery.message_id,
            )  # fmt: skip
        )

    def watch(self, on_restored: Callable[[], Awaitable[None]]) -> None:
        """Call `on_restored` from `restore()`."""
        self._on_restored.append(on_restored)

    async def restore(self) -> None:
        """Play a reconnect: connected again, then every `watch` callback."""
        self.connected, self.down_for_s = True, None
        for callback in self._on_restored:
            await callback()

    def requeue(self, delivery: Delivery) -> None:
        """Record the delivery given back."""
        self.requeued.append(delivery)

    async def stop_consuming(self, queue: str | None = None) -> None:
        """Forget the consumer of `queue` (None: every consumer)."""
        if queue is None:
            self._consumers.clear()
        else:
            self._consumers.pop(queue, None)

    async def close(self) -> None:
        """Nothing to close: disconnected for good."""
        self.connected = False
        self.closed = True

    # -- for tests ---------------------------------------------------------------------

    def deliver(
        self,
        queue: str,
        body: bytes,
        *,
        correlation_id: str | None = None,
        reply_to: str | None = None,
        headers: Mapping[str, Any] | None = None,
        message_id: str | None = None,
        redelivered: bool = False,
    ) -> tuple[Delivery, asyncio.Task[None]]:
        """Hand a message to `queue`'s consumer; returns it and the task handling it.

        `redelivered` plays the broker delivering it again (after a lost ack)."""
        handler = self._consumers.get(queue)
        if handler is None:
            raise LookupError(f"nothing consumes queue '{queue}'")
        self._tag += 1
        delivery = Delivery(
            queue, body, correlation_id, reply_to, dict(headers or {}), message_id, self._tag,
            redelivered,
        )  # fmt: skip
        return delivery, asyncio.ensure_future(handler(delivery))

    def sent_to(self, queue: str) -> list[Outbound]:
        """What was published to `queue`, in order."""
        return [m for m in self.published if m.queue == queue and not m.exchange]

    def sent_to_exchange(self, exchange: str) -> list[Outbound]:
        """What was published to `exchange`, in order."""
        return [m for m in self.published if m.exchange == exchange]

    async def wait_for(
        self, predicate: Callable[[list[Outbound]], bool], timeout_s: float = 5.0
    ) -> None:
        """Wait until `predicate(published)` holds (after a publish), or TimeoutError."""
        async with asyncio.timeout(timeout_s):
            while not predicate(self.published):
                self.published_event.clear()
                await self.published_event.wait()
