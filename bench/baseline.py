"""The baseline: the same DAGs driven straight over aio-pika, with no journal and no bookkeeping.

It publishes step requests to the same step queues as the manager (so the same pyworker
processes answer them), persistent, with publisher confirms, and consumes the replies on its
own durable queue, acking each reply once the requests it causes are confirmed. Its per-job
state is the least the DAG needs: the children's results and what is still outstanding.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from bench.procs import BenchError
from bench.shapes import WORDCOUNT, JobSpec
from bench.workers import LINEAR_STEPS

__all__ = ["BaselineDriver"]


@dataclass
class _Job:
    future: asyncio.Future[dict[str, Any]]
    items: list[Any] = field(default_factory=list)
    children_left: int = 0
    finals_left: int = 2  # sum and title
    result: dict[str, Any] = field(default_factory=dict)


class BaselineDriver:
    """Runs word-counts and linear jobs over aio-pika alone."""

    def __init__(self, channel: AbstractChannel, prefix: str, reply_queue: str) -> None:
        self._channel = channel
        self._prefix = prefix
        self._reply_queue = reply_queue
        self._jobs: dict[str, _Job] = {}

    @classmethod
    async def open(
        cls, connection: aio_pika.abc.AbstractConnection, prefix: str, prefetch: int
    ) -> BaselineDriver:
        """A driver with its own confirming channel and durable reply queue `<prefix>baseline`."""
        channel = await connection.channel(publisher_confirms=True)
        await channel.set_qos(prefetch_count=prefetch)
        driver = cls(channel, prefix, f"{prefix}baseline")
        channel.close_callbacks.add(driver._on_close)
        queue = await channel.declare_queue(driver._reply_queue, durable=True)
        await queue.consume(driver._on_reply)
        return driver

    def _on_close(self, _channel: object, exc: BaseException | None = None) -> None:
        error = BenchError(f"lost the channel to RabbitMQ: {exc}")
        for job in self._jobs.values():
            if not job.future.done():
                job.future.set_exception(error)

    async def run(self, spec: JobSpec) -> dict[str, Any]:
        """Start the job's root steps and wait for its result."""
        job = _Job(asyncio.get_running_loop().create_future())
        self._jobs[spec.job_id] = job
        body = json.dumps(spec.payload).encode()
        roots = ("split", "title") if spec.workflow == WORDCOUNT else ("s1",)
        try:
            await asyncio.gather(*(self._request(spec.job_id, step, body) for step in roots))
            return await job.future
        finally:
            self._jobs.pop(spec.job_id, None)

    async def _request(self, key: str, step: str, body: bytes) -> None:
        message = aio_pika.Message(
            body,
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=f"{key}:{step}",
            reply_to=self._reply_queue,
            headers={"x-attempt": 1},
        )
        await self._channel.default_exchange.publish(message, f"{self._prefix}{step}")

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        key, _, step = (message.correlation_id or "").rpartition(":")
        job_id, _, index = key.partition("/")
        job = self._jobs.get(job_id)
        if job is not None and not job.future.done():
            if (message.headers or {}).get("x-error"):
                job.future.set_exception(BenchError(f"job {job_id} step {step} failed"))
            else:
                await self._advance(job_id, job, step, index, message.body)
        await message.ack()

    async def _advance(self, job_id: str, job: _Job, step: str, index: str, body: bytes) -> None:
        """Publish what this reply makes ready (confirmed), or finish the job."""
        if step == "split":
            job.items = json.loads(body)["items"]
            job.children_left = len(job.items)
            await asyncio.gather(
                *(
                    self._request(f"{job_id}/{i}", "work", json.dumps({"item": item}).encode())
                    for i, item in enumerate(job.items)
                )
            )
            if not job.items:
                await self._request(job_id, "sum", b'{"items": []}')
        elif step == "work":
            job.items[int(index)] = json.loads(body)["item"]
            job.children_left -= 1
            if job.children_left == 0:
                await self._request(job_id, "sum", json.dumps({"items": job.items}).encode())
        elif step in ("sum", "title"):
            job.result.update(json.loads(body))
            job.finals_left -= 1
            if job.finals_left == 0:
                job.future.set_result(job.result)
        elif (n := int(step[1:])) < LINEAR_STEPS:
            await self._request(job_id, f"s{n + 1}", body)  # a step's input is its parent's output
        else:
            job.future.set_result(json.loads(body))

    async def close(self) -> None:
        if not self._channel.is_closed:
            await self._channel.close()
