"""What the manager needs of a message broker, as a Protocol: RabbitMQ's adapter, or memory's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from workflow_manager.transport.message import Delivery, Outbound

__all__ = ["Handler", "Transport"]

Handler = Callable[[Delivery], Awaitable[None]]
"""Handles one delivery; must `ack` it once done with it."""


class Transport(Protocol):
    """Consume queues, ack what was handled, publish with confirms. Errors are `BrokerError`s."""

    @property
    def connected(self) -> bool:
        """True while messages can flow (connected, with the manager's consumers in place)."""
        ...

    @property
    def down_for_s(self) -> float | None:
        """Seconds since the connection was lost, or None while connected."""
        ...

    async def wait_connected(self) -> None:
        """Return once connected (at once while connected); an event, not a poll."""
        ...

    def held(self, kind: str, count: int = 1) -> None:
        """Count something an outage held back, for the line that reports the outage's end."""
        ...

    async def connect(self) -> None:
        """Connect; BrokerError when the broker cannot be reached."""
        ...

    async def declare(self, queues: Iterable[str]) -> None:
        """Declare durable queues (as workers do, so they never conflict)."""
        ...

    async def declare_exchange(self, name: str) -> None:
        """Declare a durable topic exchange (for run events)."""
        ...

    async def consume(self, queue: str, handler: Handler) -> None:
        """Deliver the messages of `queue` to `handler`, in order."""
        ...

    def ack(self, delivery: Delivery) -> None:
        """Ack a delivery (soon: acks are sent in batches)."""
        ...

    async def publish(self, message: Outbound) -> None:
        """Publish and wait for the broker's confirm; `Unroutable` when no queue took it."""
        ...

    def send(self, message: Outbound) -> asyncio.Future[None]:
        """Start publishing `message`; the future ends as `publish` would (confirmed, or
        `Unroutable`, or BrokerError), with no task of its own on the way."""
        ...

    async def publish_unconfirmed(self, message: Outbound) -> None:
        """Publish to `message.exchange` without waiting for a confirm (best effort)."""
        ...

    def send_unconfirmed(self, message: Outbound) -> asyncio.Future[None]:
        """Start `publish_unconfirmed` with no task of its own: the messages started in one loop
        tick go out as one write; the future ends once it is written (or with BrokerError)."""
        ...

    async def dead_letter(self, delivery: Delivery, queue: str, reason: str) -> None:
        """Publish a copy of `delivery` to `queue` with why, and where it came from, in headers."""
        ...

    def watch(self, on_restored: Callable[[], Awaitable[None]]) -> None:
        """Await `on_restored()` after each reconnect."""
        ...

    def requeue(self, delivery: Delivery) -> None:
        """Give a delivery back to its queue unprocessed, for whoever consumes it next."""
        ...

    async def stop_consuming(self, queue: str | None = None) -> None:
        """Cancel the consumer of `queue` (None: every consumer); deliveries in hand can still
        be acked."""
        ...

    async def close(self) -> None:
        """Send the acks due, then close the connection."""
        ...
