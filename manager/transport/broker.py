"""The RabbitMQ `Transport`: one robust connection, declared queues, confirmed publishes, consumers.

aio-pika and aiormq exceptions stop here and become `BrokerError`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import aio_pika
import aiormq
from aio_pika.abc import (
    AbstractChannel,
    AbstractIncomingMessage,
    AbstractQueue,
    AbstractRobustConnection,
)

from manager.errors import BrokerError
from manager.transport.acks import Acker
from manager.transport.deadletter import dead_letter
from manager.transport.errors import AMQP_ERRORS, broker_errors
from manager.transport.message import Delivery, Outbound
from manager.transport.protocol import Handler

__all__ = ["Broker", "mask_url"]

log = logging.getLogger(__name__)

BasicProperties = aiormq.spec.Basic.Properties  # pamqp's, as aiormq exports it
_PERSISTENT = 2  # delivery mode: written to disk by the broker



def mask_url(url: str) -> str:
    """The URL with its password hidden, for logs and errors."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"


class Broker:
    """A connection to RabbitMQ that reconnects by itself, restoring queues and consumers."""

    def __init__(self, url: str, prefetch: int) -> None:
        self.url = url
        self.prefetch = prefetch
        self._connection: AbstractRobustConnection | None = None
        self._publish_channel: AbstractChannel | None = None
        self._consume_channel: AbstractChannel | None = None
        self._consumers: list[tuple[AbstractQueue, str]] = []
        self._acker = Acker()

    def __repr__(self) -> str:
        return f"<Broker {mask_url(self.url)}>"

    @property
    def connected(self) -> bool:
        """True while the connection to the broker is up."""
        return self._connection is not None and not self._connection.is_closed

    @property
    def down_for_s(self) -> float | None:
        """Seconds since the connection was lost, or None while connected."""
        return None if self.connected else 0.0

    async def connect(self, timeout_s: float = 10.0) -> None:
        """Open the connection and its channels; BrokerError when the broker cannot be reached."""
        try:
            self._connection = await aio_pika.connect_robust(self.url, timeout=timeout_s)
            # Separate channels: consumer flow control never holds up publishing, and the
            # publish channel confirms every message and raises on unroutable ones.
            self._publish_channel = await self._connection.channel(
                publisher_confirms=True, on_return_raises=True
            )
            self._consume_channel = await self._connection.channel()
            await self._consume_channel.set_qos(prefetch_count=self.prefetch)
        except AMQP_ERRORS as exc:
            await self.close()
            raise BrokerError(f"cannot connect to RabbitMQ at {mask_url(self.url)}: {exc}") from exc

    def watch(self, on_restored: Callable[[], Awaitable[None]]) -> None:
        """Log losing and regaining the broker; await `on_restored()` after each reconnect."""
        connection = self._connection
        if connection is None:
            raise BrokerError("not connected to RabbitMQ; call connect() first")

        def lost(_sender: Any, exc: BaseException | None = None) -> None:
            if exc is not None:
                log.warning("lost the connection to RabbitMQ (%s); reconnecting", exc)

        async def restored(_sender: Any) -> None:
            log.info("reconnected to RabbitMQ at %s", mask_url(self.url))
            await on_restored()

        connection.close_callbacks.add(lost)
        connection.reconnect_callbacks.add(restored)

    async def declare(self, queues: Iterable[str]) -> None:
        """Declare durable queues with no extra arguments, as workers do, so they never conflict."""
        channel = self._require(self._consume_channel)
        for name in dict.fromkeys(queues):
            with broker_errors(f"cannot declare queue '{name}'"):
                await channel.declare_queue(name, durable=True)

    async def consume(self, queue: str, handler: Handler) -> None:
        """Deliver messages of `queue` to `handler`, which must `ack()` each one it is done with."""
        channel = self._require(self._consume_channel)
        acker = self._acker

        async def deliver(message: AbstractIncomingMessage) -> None:
            acker.received(message)
            await handler(
                Delivery(
                    queue, message.body, message.correlation_id, message.reply_to,
                    message.headers or {}, message.message_id, message,
                )  # fmt: skip
            )

        with broker_errors(f"cannot consume from queue '{queue}'"):
            # Declared (not fetched passively) so the robust channel restores it on reconnect.
            declared = await channel.declare_queue(queue, durable=True)
            tag = await declared.consume(deliver)
        self._consumers.append((declared, tag))

    def ack(self, delivery: Delivery) -> None:
        """Ack a consumed message (sent at the end of this loop tick, with the others due)."""
        self._acker.ack(delivery.handle)

    async def stop_consuming(self) -> None:
        """Cancel every consumer; messages in hand are still acked normally."""
        consumers, self._consumers = self._consumers, []
        for queue, tag in consumers:
            try:
                await queue.cancel(tag)
            except AMQP_ERRORS as exc:
                log.debug("cancelling consumer %s failed: %s", tag, exc)

    async def publish(self, message: Outbound) -> None:
        """Publish a persistent JSON message on the default exchange and wait for its confirm."""
        channel = self._require(self._publish_channel)
        routing_key = message.queue
        # Straight to aiormq: an aio_pika.Message per publish costs more CPU than the rest of
        # aio-pika's publish path, and these messages need none of what it adds.
        properties = BasicProperties(
            content_type="application/json",
            delivery_mode=_PERSISTENT,
            correlation_id=message.correlation_id,
            reply_to=message.reply_to,
            message_id=message.message_id,
            headers=dict(message.headers),
        )
        if channel.is_closed:
            raise BrokerError(f"publishing to queue '{routing_key}' failed: the channel is closed")
        with broker_errors(
            f"publishing to queue '{routing_key}' failed",
            returned=f"no queue '{routing_key}' exists; the message came back",
        ):
            underlay = await channel.get_underlay_channel()
            await underlay.basic_publish(
                message.body, routing_key=routing_key, properties=properties, mandatory=True
            )

    async def dead_letter(self, delivery: Delivery, queue: str, reason: str) -> None:
        """Publish a copy of `delivery` (all its properties) to `queue`, with why and from where."""
        channel = self._require(self._publish_channel)
        copy = dead_letter(delivery.handle, reason, delivery.queue)
        with broker_errors(
            f"publishing to queue '{queue}' failed",
            returned=f"no queue '{queue}' exists; the message came back",
        ):
            await channel.default_exchange.publish(copy, queue, mandatory=True)

    async def close(self) -> None:
        """Close the connection (and its channels)."""
        await self._acker.drain()
        connection, self._connection = self._connection, None
        self._publish_channel = self._consume_channel = None
        if connection is not None:
            try:
                await connection.close()
            except AMQP_ERRORS as exc:
                log.debug("closing the connection failed: %s", exc)

    def _require(self, channel: AbstractChannel | None) -> AbstractChannel:
        if channel is None:
            raise BrokerError("not connected to RabbitMQ; call connect() first")
        return channel
