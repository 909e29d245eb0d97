"""The broker's consumers read deliveries straight from aiormq's channel, so they recover by
themselves: after their queue is deleted, and after a channel error closes the channel."""

from __future__ import annotations

import asyncio

import aio_pika

from workflow_manager.errors import Unroutable
from workflow_manager.transport import Broker, Delivery, Outbound


async def _received(broker: Broker, queue: str) -> asyncio.Queue[Delivery]:
    """Consume `queue`, acking each delivery; what arrives, in order."""
    got: asyncio.Queue[Delivery] = asyncio.Queue()

    async def handle(delivery: Delivery) -> None:
        broker.ack(delivery)
        await got.put(delivery)

    await broker.consume(queue, handle)
    return got


async def _publish_once_routable(broker: Broker, message: Outbound) -> None:
    """Publish `message` as soon as its queue exists again (it is being declared anew)."""
    for _ in range(200):
        try:
            await broker.publish(message)
            return
        except Unroutable:
            await asyncio.sleep(0.02)  # polling RabbitMQ for the queue, not synchronising
    raise AssertionError(f"queue '{message.queue}' was not declared again")


async def test_a_consumer_whose_queue_was_deleted_declares_it_again_and_goes_on(
    amqp_url, broker, queue
):
    got = await _received(broker, queue)
    await broker.publish(Outbound(queue, b"{}", correlation_id="before"))
    assert (await asyncio.wait_for(got.get(), 10)).correlation_id == "before"

    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        await channel.queue_delete(queue)  # RabbitMQ cancels our consumer
    finally:
        await connection.close()
    await _publish_once_routable(broker, Outbound(queue, b"{}", correlation_id="after"))
    assert (await asyncio.wait_for(got.get(), 10)).correlation_id == "after"


async def test_consumers_start_again_when_a_channel_error_reopens_their_channel(broker, queue):
    got = await _received(broker, queue)
    await broker.publish(Outbound(queue, b"{}", correlation_id="before"))
    first = await asyncio.wait_for(got.get(), 10)
    assert first.correlation_id == "before"

    # An ack of a tag the channel never delivered: RabbitMQ closes the channel
    # (PRECONDITION_FAILED) and aio-pika reopens it.
    await first.handle.channel.basic_ack(10_000)
    await broker.publish(Outbound(queue, b"{}", correlation_id="after"))
    again = await asyncio.wait_for(got.get(), 10)
    assert again.correlation_id == "after"
    assert again.handle.channel is not first.handle.channel
