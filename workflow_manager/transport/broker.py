"""The RabbitMQ `Transport`: one robust connection, declared queues, confirmed publishes, consumers.

aio-pika and aiormq exceptions stop here and become `BrokerError`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

import aiormq
from aio_pika import ExchangeType, IncomingMessage
from aio_pika.abc import AbstractChannel, AbstractRobustConnection
from aiormq.abc import DeliveredMessage

from amqp_outage import Outage, ReconnectSettingsError, connect, quiet_disconnect_noise
from workflow_manager.errors import BrokerError
from workflow_manager.transport.acks import Acker
from workflow_manager.transport.deadletter import dead_letter
from workflow_manager.transport.errors import AMQP_ERRORS, as_broker_error, broker_errors
from workflow_manager.transport.framing import Framer
from workflow_manager.transport.message import Delivery, Outbound
from workflow_manager.transport.protocol import Handler
from workflow_manager.transport.reading import tap

__all__ = ["Broker", "mask_url"]

log = logging.getLogger(__name__)

_DROPPED_ACKS = "acks dropped (RabbitMQ delivers those messages again)"


async def _not_connected() -> Any:
    raise BrokerError("not connected to RabbitMQ; call connect() first")


def _target(message: Outbound) -> str:
    return f"exchange '{message.exchange}'" if message.exchange else f"queue '{message.queue}'"


def _publish_error(exc: BaseException, message: Outbound) -> BaseException:
    """A failed publish's error as the manager's own (`Unroutable`, `BrokerError`)."""
    return as_broker_error(
        exc,
        f"publishing to {_target(message)} failed",
        returned=f"no queue '{message.queue}' exists; the message came back",
    )


def mask_url(url: str) -> str:
    """The URL with its password hidden, for logs and errors."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"


@dataclass(slots=True)
class _Consumer:
    """One queue we consume: started again on each new channel, its tag the latest one."""

    queue: str
    deliver: Callable[[DeliveredMessage], Coroutine[Any, Any, None]]
    tag: str | None = None
    underlay: Any = None  # the aiormq channel it consumes on


class Broker:
    """A connection to RabbitMQ that reconnects by itself, restoring queues and consumers."""

    def __init__(self, url: str, prefetch: int) -> None:
        self.url = url
        self.prefetch = prefetch
        self._connection: AbstractRobustConnection | None = None
        self._publish_channel: AbstractChannel | None = None
        self._event_channel: AbstractChannel | None = None
        self._consume_channel: AbstractChannel | None = None
        self._consumers: list[_Consumer] = []
        self._watchers: list[Callable[[], Awaitable[None]]] = []
        self._cancel_callback = self._cancelled  # one bound method: added once per channel
        self._restarts: set[asyncio.Task[None]] = set()
        self._starting = asyncio.Lock()
        self._framer = self._event_framer = Framer(_not_connected, _publish_error)
        self._closed = False
        # Queues that exist with arguments of their owner's: used as they are, never declared.
        self._as_found: set[str] = set()
        # One WARNING when an outage starts, one INFO when it ends (with what was held back).
        self.outage = Outage("RabbitMQ connection", logger=log)
        self._acker = Acker(on_dropped=lambda count: self.outage.held(_DROPPED_ACKS, count))

    def __repr__(self) -> str:
        return f"<Broker {mask_url(self.url)}>"

    @property
    def connected(self) -> bool:
        """True while connected with channels, queues and consumers in place (not reconnecting)."""
        return self._connection is not None and self.outage.connected

    @property
    def down_for_s(self) -> float | None:
        """Seconds since the connection was lost, None while connected (0 before connecting)."""
        if self._connection is None:
            return 0.0
        return self.outage.down_for_s

    async def wait_connected(self) -> None:
        """Return once the connection is back (at once while connected): an event, not a poll.

        BrokerError once closed: nothing waiting would ever be sent (a caller that retried at
        once would spin the event loop instead).
        """
        if self._closed:
            raise BrokerError("the connection to RabbitMQ was closed")
        await self.outage.wait_connected()

    def held(self, kind: str, count: int = 1) -> None:
        """Count something held back by an outage, for the line that ends it."""
        self.outage.held(kind, count)

    async def connect(self, timeout_s: float = 10.0) -> None:
        """Open the connection and its channels; BrokerError when the broker cannot be reached."""
        quiet_disconnect_noise()  # the Outage logs one line per outage instead of aio-pika's
        name = f"workflow-manager {socket.gethostname()} pid={os.getpid()}"
        try:
            self._connection = await connect(
                self.url, name=name, outage=self.outage, timeout_s=timeout_s
            )
            # Separate channels: consumer flow control never holds up publishing, and the
            # publish channel confirms every message and raises on unroutable ones.
            self._publish_channel = await self._connection.channel(
                publisher_confirms=True, on_return_raises=True
            )
            self._consume_channel = await self._connection.channel()
            await self._consume_channel.set_qos(prefetch_count=self.prefetch)
            # Run events go out best effort on a channel of their own with no confirms: a
            # confirmed publish costs twice the CPU, and the journal, not the events, is the truth.
            self._event_channel = await self._connection.channel(publisher_confirms=False)
            self._framer = Framer(self._publish_channel.get_underlay_channel, _publish_error)
            self._event_framer = Framer(self._event_channel.get_underlay_channel, _publish_error)
            self._connection.reconnect_callbacks.add(self._restored)
            # The consume channel alone reopened (a channel error closed it): consume again.
            self._consume_channel.reopen_callbacks.add(self._reopened)
        except (*AMQP_ERRORS, ReconnectSettingsError) as exc:  # the latter: ?reconnect_interval=
            await self.close()
            raise BrokerError(f"cannot connect to RabbitMQ at {mask_url(self.url)}: {exc}") from exc

    def watch(self, on_restored: Callable[[], Awaitable[None]]) -> None:
        """Await `on_restored()` after each reconnect (channels, queues and consumers are back)."""
        if self._connection is None:
            raise BrokerError("not connected to RabbitMQ; call connect() first")
        self._watchers.append(on_restored)

    async def _restored(self, _sender: Any) -> None:
        """After a reconnect (aio-pika has restored the channels and declared the queues
        again): our consumers start again, then whoever watches is told."""
        if not await self._start_all("the reconnect"):
            return  # the connection went again: the next reconnect starts them
        for on_restored in self._watchers:
            await on_restored()

    async def _reopened(self, _sender: Any) -> None:
        """The consume channel reopened (after a reconnect, or alone after a channel error):
        our consumers start on it again."""
        await self._start_all("the channel reopened")

    async def _start_all(self, after: str) -> bool:
        """Start every consumer not consuming on the current channel; False if that failed."""
        try:
            for consumer in list(self._consumers):
                await self._start(consumer)
        except (*AMQP_ERRORS, BrokerError) as exc:
            log.debug("consuming again after %s failed: %s", after, exc)
            return False
        return True

    def _cancelled(self, frame: aiormq.spec.Basic.Cancel) -> None:
        """RabbitMQ cancelled one of our consumers (its queue was deleted): declare the queue
        again and consume it, as aio-pika's own consumers recover. In a task: this runs in
        the channel's reader, which the declaration's answer must pass through."""
        consumer = next((c for c in self._consumers if c.tag == frame.consumer_tag), None)
        if consumer is None:
            return
        log.warning(
            "RabbitMQ cancelled the consumer of queue '%s' (was it deleted?): declaring it "
            "again and consuming it", consumer.queue,
        )  # fmt: skip
        consumer.tag = None
        task = asyncio.get_running_loop().create_task(self._consume_again(consumer))
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)

    async def _consume_again(self, consumer: _Consumer) -> None:
        try:
            await self._require(self._consume_channel).declare_queue(consumer.queue, durable=True)
            await self._start(consumer)
        except (*AMQP_ERRORS, BrokerError) as exc:
            # The connection is going: its reconnect starts the consumer.
            log.debug("consuming '%s' again failed: %s", consumer.queue, exc)

    async def declare(self, queues: Iterable[str]) -> None:
        """Declare durable queues with no extra arguments, as workers do.

        A queue its owner declared with other arguments (e.g. `x-max-priority`) is used as it
        is: declaring it again would close the channel with PRECONDITION_FAILED.
        """
        channel = self._require(self._consume_channel)
        for name in dict.fromkeys(queues):
            if name in self._as_found or not await self._declarable(name):
                continue
            with broker_errors(f"cannot declare queue '{name}'"):
                await channel.declare_queue(name, durable=True)

    async def _declarable(self, name: str) -> bool:
        """Try the declaration on a throwaway plain channel: False when the queue differs."""
        underlay = self._require_connection().transport
        assert underlay is not None  # _require_connection checked it, with nothing awaited since
        with broker_errors(f"cannot declare queue '{name}'"):
            probe = await underlay.connection.channel()
            try:
                await probe.queue_declare(name, durable=True)
            except aiormq.exceptions.ChannelPreconditionFailed as exc:
                self._as_found.add(name)
                log.info(
                    "queue '%s' exists with other arguments; using it as it is (%s)", name, exc
                )
                return False
            finally:
                if not probe.is_closed:
                    await probe.close()
        return True

    async def declare_exchange(self, name: str) -> None:
        """Declare a durable topic exchange; the robust channel declares it again on reconnect."""
        channel = self._require(self._publish_channel)
        with broker_errors(f"cannot declare exchange '{name}'"):
            await channel.declare_exchange(name, ExchangeType.TOPIC, durable=True)

    async def consume(self, queue: str, handler: Handler) -> None:
        """Deliver messages of `queue` to `handler`, which must `ack()` each one it is done with."""
        channel = self._require(self._consume_channel)
        acker = self._acker

        # Straight from aiormq: aio-pika's IncomingMessage and its second task per delivery
        # cost a fifth of what a delivery costs the manager, and nothing here needs them.
        async def deliver(message: DeliveredMessage) -> None:
            acker.received(message)
            properties = message.header.properties
            await handler(
                Delivery(
                    queue,
                    message.body,
                    properties.correlation_id,
                    properties.reply_to,
                    properties.headers or {},
                    properties.message_id,
                    message,
                    bool(message.delivery.redelivered),  # type: ignore[union-attr]
                )  # fmt: skip
            )

        consumer = _Consumer(queue, deliver)
        with broker_errors(f"cannot consume from queue '{queue}'"):
            # Declared on the robust channel, so aio-pika declares it again on reconnect;
            # `_restored` then starts the consumer again.
            await channel.declare_queue(queue, durable=True)
            await self._start(consumer)
        self._consumers.append(consumer)

    async def _start(self, consumer: _Consumer) -> None:
        """Start `consumer` on the consume channel's current aiormq channel, unless it
        consumes there already (a reconnect reopens the channel, then reconnects)."""
        # One start at a time: a reopen and a reconnect both starting a consumer would
        # otherwise both find it not consuming, and consume twice.
        async with self._starting:
            underlay = await self._require(self._consume_channel).get_underlay_channel()
            if consumer.underlay is underlay and consumer.tag in underlay.consumers:
                return
            if self._cancel_callback not in underlay.on_consumer_cancel_callbacks:
                underlay.on_consumer_cancel_callbacks.add(self._cancel_callback)
            tap(underlay)  # its deliveries start their consumer where they arrive
            started = await underlay.basic_consume(consumer.queue, consumer.deliver)
            consumer.tag, consumer.underlay = started.consumer_tag, underlay

    def ack(self, delivery: Delivery) -> None:
        """Ack a consumed message (sent at the end of this loop tick, with the others due)."""
        self._acker.ack(delivery.handle)

    def requeue(self, delivery: Delivery) -> None:
        """Give a delivery back to its queue (a nack with requeue, in order with the acks)."""
        self._acker.requeue(delivery.handle)

    async def stop_consuming(self, queue: str | None = None) -> None:
        """Cancel the consumer of `queue` (None: every consumer); messages in hand are still
        acked normally."""
        stopping = [c for c in self._consumers if queue is None or c.queue == queue]
        self._consumers = [c for c in self._consumers if c not in stopping]
        for consumer in stopping:
            try:
                underlay = await self._require(self._consume_channel).get_underlay_channel()
                if consumer.tag is not None:
                    await underlay.basic_cancel(consumer.tag)
            except (*AMQP_ERRORS, BrokerError) as exc:
                log.debug("cancelling consumer %s failed: %s", consumer.tag, exc)

    async def publish(self, message: Outbound) -> None:
        """Publish a persistent JSON message and wait for its confirm.

        On the default exchange it must reach a queue (else `Unroutable`); on a named
        `exchange` (run events) it need not.
        """
        await self.send(message)

    def send(self, message: Outbound) -> asyncio.Future[None]:
        """Start publishing `message` (as `publish`); the future ends with its confirm."""
        return self._framed(self._publish_channel, self._framer, message)

    async def publish_unconfirmed(self, message: Outbound) -> None:
        """Publish to `message.exchange` without waiting for a confirm (run events)."""
        await self.send_unconfirmed(message)

    def send_unconfirmed(self, message: Outbound) -> asyncio.Future[None]:
        """Start publishing `message` unconfirmed; the future ends once it is written."""
        return self._framed(self._event_channel, self._event_framer, message)

    def _framed(
        self, channel: AbstractChannel | None, framer: Framer, message: Outbound
    ) -> asyncio.Future[None]:
        # Straight to aiormq's frames, in batches of a loop tick (`framing`): an
        # aio_pika.Message and a basic_publish per message cost four times the CPU.
        if channel is None or channel.is_closed:
            failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            state = "not connected" if channel is None else "the channel is closed"
            failed.set_exception(BrokerError(f"publishing to {_target(message)} failed: {state}"))
            return failed
        return framer.publish(message)

    async def dead_letter(self, delivery: Delivery, queue: str, reason: str) -> None:
        """Publish a copy of `delivery` (all its properties) to `queue`, with why and from where."""
        channel = self._require(self._publish_channel)
        handle = delivery.handle
        if isinstance(handle, DeliveredMessage):  # aio-pika's view of it reads its properties
            handle = IncomingMessage(handle, no_ack=False)
        copy = dead_letter(handle, reason, delivery.queue, time.time())
        with broker_errors(
            f"publishing to queue '{queue}' failed",
            returned=f"no queue '{queue}' exists; the message came back",
        ):
            await channel.default_exchange.publish(copy, queue, mandatory=True)

    async def close(self) -> None:
        """Close the connection (and its channels)."""
        self.outage.close()  # on purpose: no outage to report
        self._closed = True
        await self._acker.drain()
        connection, self._connection = self._connection, None
        self._publish_channel = self._consume_channel = self._event_channel = None
        if connection is not None:
            try:
                await connection.close()
            except AMQP_ERRORS as exc:
                log.debug("closing the connection failed: %s", exc)

    def _require_connection(self) -> AbstractRobustConnection:
        if self._connection is None or self._connection.transport is None:
            raise BrokerError("not connected to RabbitMQ; call connect() first")
        return self._connection

    def _require(self, channel: AbstractChannel | None) -> AbstractChannel:
        if channel is None:
            raise BrokerError("not connected to RabbitMQ; call connect() first")
        return channel
