"""Running jobs through the manager: triggers to `<queue>.jobs`, outcomes on a queue of our own."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from bench.procs import BenchError
from bench.shapes import JobSpec

__all__ = ["ManagerDriver"]


class ManagerDriver:
    """Publishes triggers as any client would and resolves each job on its outcome message."""

    def __init__(self, channel: AbstractChannel, trigger_queue: str, outcome_queue: str) -> None:
        self._channel = channel
        self._trigger_queue = trigger_queue
        self._outcome_queue = outcome_queue
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}

    @classmethod
    async def open(
        cls, connection: aio_pika.abc.AbstractConnection, trigger_queue: str, outcome_queue: str
    ) -> ManagerDriver:
        """A driver on its own confirming channel, consuming `outcome_queue` (durable)."""
        channel = await connection.channel(publisher_confirms=True)
        driver = cls(channel, trigger_queue, outcome_queue)
        channel.close_callbacks.add(driver._on_close)
        queue = await channel.declare_queue(outcome_queue, durable=True)
        await queue.consume(driver._on_outcome, no_ack=True)
        return driver

    def _on_close(self, _channel: object, exc: BaseException | None = None) -> None:
        """The channel is gone (e.g. the broker restarted): no outcome will come any more."""
        error = BenchError(f"lost the channel to RabbitMQ: {exc}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(error)

    async def run(self, spec: JobSpec) -> dict[str, Any]:
        """Trigger the job and wait for its outcome; its result, or BenchError if it failed."""
        future = asyncio.get_running_loop().create_future()
        self._waiting[spec.job_id] = future
        trigger = aio_pika.Message(
            json.dumps(spec.payload).encode(),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=spec.job_id,
            reply_to=self._outcome_queue,
            headers={"workflow": spec.workflow},
        )
        await self._channel.default_exchange.publish(trigger, self._trigger_queue)
        try:
            return await future
        finally:
            self._waiting.pop(spec.job_id, None)

    def _on_outcome(self, message: AbstractIncomingMessage) -> None:
        future = self._waiting.get(message.correlation_id or "")
        if future is None or future.done():
            return  # a duplicate outcome (at-least-once), or a job of an earlier timed-out run
        status = (message.headers or {}).get("x-status")
        status = status.decode() if isinstance(status, bytes) else status
        body = json.loads(message.body) if message.body else {}
        if status == "completed":
            future.set_result(body)
        else:
            future.set_exception(BenchError(f"job {message.correlation_id} {status}: {body}"))

    async def close(self) -> None:
        if not self._channel.is_closed:
            await self._channel.close()
