"""Batched acks against the real broker: what is acked stays gone, what is held comes back."""

from __future__ import annotations

import asyncio

import aio_pika

from workflow_manager.transport import Broker, Delivery, Outbound


async def _publish(broker: Broker, queue: str, count: int) -> None:
    for index in range(count):
        await broker.publish(Outbound(queue, str(index).encode(), correlation_id=f"m{index}"))


async def test_a_held_message_is_redelivered_and_every_acked_one_is_not(amqp_url, unique):
    queue = f"{unique}.acks"
    broker = Broker(amqp_url, prefetch=50)
    await broker.connect()
    await broker.declare([queue])
    await _publish(broker, queue, 30)
    seen: list[str] = []
    all_seen = asyncio.Event()

    async def handle(message: Delivery) -> None:
        seen.append(message.correlation_id or "")
        if message.correlation_id != "m7":  # m7 stays in hand, unacked
            await asyncio.sleep(0)  # finish in a later tick than the delivery
            broker.ack(message)
        if len(seen) == 30:
            all_seen.set()

    await broker.consume(queue, handle)
    await asyncio.wait_for(all_seen.wait(), timeout=20)
    await broker.stop_consuming()
    await broker.close()  # sends the due acks first; m7 goes back to the queue

    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        again = await channel.declare_queue(queue, durable=True)
        first = await again.get(timeout=5)
        assert first.correlation_id == "m7" and first.redelivered
        await first.ack()
        assert await again.get(fail=False) is None  # nothing else came back
        await channel.queue_delete(queue)
    finally:
        await connection.close()
    assert sorted(seen) == sorted(f"m{i}" for i in range(30))
