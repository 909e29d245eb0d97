"""Fixtures for pyworker against the real RabbitMQ: a `caller` that plays the manager's side."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aio_pika
import pytest
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue

from pyworker import Worker

REPLY_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Received:
    """A reply as the manager sees it."""

    body: dict[str, Any]
    headers: dict[str, Any]
    correlation_id: str | None
    content_type: str | None
    persistent: bool


class Caller:
    """Publishes requests like the manager does and collects the replies on its own queue."""

    def __init__(self, channel: AbstractChannel, reply_queue: AbstractQueue, prefix: str) -> None:
        self.channel = channel
        self.reply_queue = reply_queue
        self.prefix = prefix
        self.step_queues: set[str] = set()
        self.replies: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()

    def queue(self, step: str) -> str:
        """A queue name unique to this test; it is deleted at teardown."""
        name = f"{self.prefix}.{step}"
        self.step_queues.add(name)
        return name

    async def request(
        self,
        queue: str,
        body: dict[str, Any] | bytes,
        *,
        attempt: int | None = 1,
        reply_to: str | None = "",
        step: str = "step",
    ) -> str:
        """Publish a request as the manager would; returns its correlation id."""
        correlation_id = f"{uuid.uuid4()}:{step}"
        headers: dict[str, Any] = {"x-workflow": "test-workflow"}
        if attempt is not None:
            headers["x-attempt"] = attempt
        message = aio_pika.Message(
            body=body if isinstance(body, bytes) else json.dumps(body).encode(),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=correlation_id,
            reply_to=self.reply_queue.name if reply_to == "" else reply_to,
            message_id=uuid.uuid4().hex,
            headers=headers,
        )
        await self.declare(queue)
        await self.channel.default_exchange.publish(message, routing_key=queue)
        return correlation_id

    async def declare(self, queue: str) -> int:
        """Declare `queue` as the manager does (durable, no arguments); returns its ready count."""
        declared = await self.channel.declare_queue(queue, durable=True)
        return declared.declaration_result.message_count or 0

    async def reply(self, timeout_s: float = REPLY_TIMEOUT_S) -> Received:
        """The next reply, waiting at most `timeout_s`."""
        message = await asyncio.wait_for(self.replies.get(), timeout_s)
        return Received(
            body=json.loads(message.body),
            headers=dict(message.headers or {}),
            correlation_id=message.correlation_id,
            content_type=message.content_type,
            persistent=message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT,
        )


@pytest.fixture
async def caller(amqp_url: str, unique: str) -> AsyncIterator[Caller]:
    """A manager stand-in with its own reply queue; deletes the test's step queues afterwards."""
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    reply_queue = await channel.declare_queue(f"{unique}.replies", exclusive=True)
    result = Caller(channel, reply_queue, unique)

    async def collect(message: AbstractIncomingMessage) -> None:
        await message.ack()
        result.replies.put_nowait(message)

    await reply_queue.consume(collect)
    try:
        yield result
    finally:
        for name in result.step_queues:
            await channel.queue_delete(name)
        await connection.close()


@pytest.fixture
async def make_worker(amqp_url: str, unique: str) -> AsyncIterator[Callable[..., Worker]]:
    """Build Workers for the test's broker; each is stopped at teardown."""
    workers: list[Worker] = []

    def build(**options: Any) -> Worker:
        options.setdefault("stop_timeout_s", 10.0)
        options.setdefault("environ", {})
        worker = Worker(amqp_url, name=f"pyworker test {unique}", **options)
        workers.append(worker)
        return worker

    yield build
    for worker in workers:
        await worker.stop()
