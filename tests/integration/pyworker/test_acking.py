"""A request is acked only once its reply is accepted by the broker (publisher confirms)."""

from __future__ import annotations

import asyncio
import json

from pyworker import StepContext

REFUSING = {"x-max-length": 0, "x-overflow": "reject-publish"}


async def test_request_is_not_acked_while_the_broker_refuses_the_reply(caller, make_worker, unique):
    worker = make_worker()
    queue = caller.queue("refused")
    reply_to = f"{unique}.refusing-replies"
    calls: list[StepContext] = []
    called_twice = asyncio.Event()

    @worker.step(queue)
    async def handler(data, ctx):
        calls.append(ctx)
        if len(calls) >= 2:
            called_twice.set()
        return {"n": len(calls)}

    # A reply queue that refuses every message: the broker nacks the worker's reply.
    await caller.channel.declare_queue(reply_to, exclusive=True, arguments=REFUSING)
    await worker.start()
    await caller.request(queue, {}, reply_to=reply_to)
    await asyncio.wait_for(called_twice.wait(), 15)
    assert calls[1].redelivered, "the unacked request must come back from RabbitMQ"

    # Accept replies now: the next delivery's reply goes through and the request is acked.
    await caller.channel.queue_delete(reply_to)
    accepting = await caller.channel.declare_queue(reply_to, exclusive=True)
    replies: asyncio.Queue[bytes] = asyncio.Queue()

    async def collect(message):
        await message.ack()
        replies.put_nowait(message.body)

    await accepting.consume(collect)
    body = await asyncio.wait_for(replies.get(), 15)

    assert json.loads(body) == {"n": len(calls)}
    await worker.stop()
    assert await caller.declare(queue) == 0


async def test_reply_to_a_missing_queue_is_dropped_and_the_request_acked(
    caller, make_worker, unique
):
    worker = make_worker()
    queue = caller.queue("unroutable")
    calls = []

    @worker.step(queue)
    def handler(data):
        calls.append(data)
        return {"ok": True}

    await caller.request(queue, {"n": 1}, reply_to=f"{unique}.no-such-queue")
    await worker.run_until_idle(timeout_s=15)

    assert calls == [{"n": 1}]
    assert await caller.declare(queue) == 0
