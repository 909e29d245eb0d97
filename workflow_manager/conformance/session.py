"""The kit's side of the wire: private reply queues, manager-shaped publishes, and a consumer
that gets ahead of the worker on its own queue (to requeue a request, or to see one come back).

Every queue the kit declares is exclusive: RabbitMQ deletes it when the kit disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import aio_pika
from aio_pika.abc import (
    AbstractChannel,
    AbstractConnection,
    AbstractIncomingMessage,
    AbstractQueue,
)

from payload_refs import count_ref_keys, resolve
from payload_refs.errors import PayloadRefError
from workflow_manager.conformance.model import Reply, SentRequest
from workflow_manager.conformance.requests import build_request, step_name_for
from workflow_manager.conformance.settings import KitSettings

if TYPE_CHECKING:
    from payload_refs import PayloadStore

__all__ = ["Session", "Grab", "to_reply"]

# Consumers of higher priority get every message they have room for before the worker gets any.
_GRAB_PRIORITY = 1000
_GRAB_PREFETCH = 200


def to_reply(message: AbstractIncomingMessage) -> Reply:
    """A received message as a Reply (headers copied, so the message can go)."""
    return Reply(
        correlation_id=message.correlation_id,
        content_type=message.content_type,
        headers=dict(message.headers or {}),
        body=message.body,
    )


class Session:
    """One kit run's connection and channel, with ids for its requests, and the payload store
    it shares with the worker (None without --payload-store)."""

    def __init__(
        self,
        connection: AbstractConnection,
        channel: AbstractChannel,
        settings: KitSettings,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        store: PayloadStore | None = None,
    ) -> None:
        self.connection = connection
        self.channel = channel
        self.settings = settings
        self.store = store
        self.step = step_name_for(settings.queue)
        self._new_id = new_id
        self._run = new_id()[:8]
        self._jobs: set[str] = set()

    def new_id(self) -> str:
        """A fresh job id, whose stored values `forget_jobs` removes."""
        job_id = self._new_id()
        self._jobs.add(job_id)
        return job_id

    def request(
        self,
        data: Mapping[str, Any],
        *,
        attempt: int = 1,
        extra_headers: Mapping[str, Any] | None = None,
    ) -> SentRequest:
        """A request for a new job id, as the manager would send it."""
        return build_request(
            self.new_id(), self.step, data, attempt=attempt, extra_headers=extra_headers
        )

    async def forget_jobs(self) -> None:
        """Remove what the kit and the worker stored for the kit's jobs. Best effort: a value
        left behind costs space until the store's retention, not correctness."""
        if self.store is not None and self._jobs:
            with contextlib.suppress(PayloadRefError, OSError):
                await self.store.remove_jobs(sorted(self._jobs))

    async def read_back(self, reply: Reply) -> Reply:
        """`reply` with the references in its body read back from the kit's store (with --echo,
        whose checks compare values); unchanged without a store or references."""
        if self.store is None or not self.settings.echo or not count_ref_keys(reply.body):
            return reply
        output, problem = reply.output()
        if problem is not None or not isinstance(output, dict):
            return reply  # the rules report the body itself
        try:
            resolved = await resolve(output, {self.store.name: self.store})
        except PayloadRefError as exc:
            return dataclasses.replace(reply, unresolved=str(exc))
        return dataclasses.replace(reply, resolved=resolved)

    async def reply_queue(
        self, label: str, arguments: Mapping[str, Any] | None = None
    ) -> AbstractQueue:
        """A private queue `conformance.<run>.<label>` for replies (gone when the kit leaves)."""
        return await self.channel.declare_queue(
            f"conformance.{self._run}.{label}",
            exclusive=True,
            arguments=dict(arguments) if arguments else None,
        )

    async def publish(self, request: SentRequest, reply_to: str) -> None:
        """Publish `request` to the worker's queue with the manager's properties; confirmed."""
        message = aio_pika.Message(
            request.body,
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=request.correlation_id,
            message_id=request.message_id,
            reply_to=reply_to,
            headers=dict(request.headers),
        )
        await self.channel.default_exchange.publish(
            message, routing_key=self.settings.queue, mandatory=True
        )

    async def put(self, queue: str, body: bytes, **properties: Any) -> None:
        """Publish a message of the kit's own (a filler, a marker) to `queue`; confirmed."""
        message = aio_pika.Message(body, **properties)
        await self.channel.default_exchange.publish(message, routing_key=queue, mandatory=True)

    async def collect(self, queue: AbstractQueue, count: int) -> tuple[Reply, ...]:
        """The messages reaching `queue` until `count` have come or the timeout passes."""
        received: list[Reply] = []
        enough = asyncio.Event()

        async def on_message(message: AbstractIncomingMessage) -> None:
            received.append(to_reply(message))
            if len(received) >= count:
                enough.set()

        tag = await queue.consume(on_message, no_ack=True)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(enough.wait(), self.settings.timeout_s)
        finally:
            await queue.cancel(tag)
        return tuple([await self.read_back(reply) for reply in received])

    def grab(self) -> Grab:
        """A consumer on the worker's queue that gets messages before the worker does."""
        return Grab(self.connection, self.settings.queue)


class Grab:
    """The kit's consumer on the worker's queue with a higher `x-priority` than the worker's.

    Use as `async with session.grab() as grab:`; on leaving, its consumer is cancelled first,
    then every message it holds is requeued (so it goes to the worker, flagged `redelivered`),
    except those passed to `keep()`, which are acked (taken off the queue for good).
    """

    def __init__(self, connection: AbstractConnection, queue: str) -> None:
        self._connection = connection
        self._queue_name = queue
        self._channel: AbstractChannel | None = None
        self._queue: AbstractQueue | None = None
        self._tag: str | None = None
        self._arrived: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()
        self._held: list[AbstractIncomingMessage] = []
        self._kept: list[AbstractIncomingMessage] = []

    async def __aenter__(self) -> Grab:
        self._channel = await self._connection.channel()
        await self._channel.set_qos(prefetch_count=_GRAB_PREFETCH)
        self._queue = await self._channel.declare_queue(self._queue_name, passive=True)
        self._tag = await self._queue.consume(
            self._arrived.put, arguments={"x-priority": _GRAB_PRIORITY}
        )
        return self

    async def take(
        self, wanted: Callable[[AbstractIncomingMessage], bool], timeout_s: float
    ) -> AbstractIncomingMessage | None:
        """The first message for which `wanted` is true (others are held), or None in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            remaining = deadline - loop.time()
            try:
                message = await asyncio.wait_for(self._arrived.get(), max(remaining, 0))
            except TimeoutError:
                return None
            self._held.append(message)
            if wanted(message):
                return message

    @property
    def held(self) -> tuple[AbstractIncomingMessage, ...]:
        """Every message the kit's consumer has received so far, in order."""
        return tuple(self._held)

    def seen(self, wanted: Callable[[AbstractIncomingMessage], bool]) -> bool:
        """Whether a message for which `wanted` is true has come to the kit."""
        return any(wanted(message) for message in self._held)

    def keep(self, message: AbstractIncomingMessage) -> None:
        """Ack `message` on leaving instead of requeueing it."""
        self._kept.append(message)

    async def __aexit__(self, *exc_info: object) -> None:
        if self._queue is None or self._channel is None or self._tag is None:
            return  # __aenter__ failed part-way; closing the connection requeues anything held
        try:
            # Cancel first: a message requeued while the kit still consumes would come back to it.
            await self._queue.cancel(self._tag)
            while not self._arrived.empty():
                self._held.append(self._arrived.get_nowait())
            for message in self._held:
                if any(message is kept for kept in self._kept):
                    await message.ack()
                else:
                    await message.nack(requeue=True)
        finally:
            await self._channel.close()
