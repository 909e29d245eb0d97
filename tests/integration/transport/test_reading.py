"""The consume channel's deliveries are put together where the connection hands over their
frames (`transport.reading`): whole, in order, whatever their size, against the real broker."""

from __future__ import annotations

import asyncio

from workflow_manager.transport import Broker, Delivery, Outbound
from workflow_manager.transport.reading import DeliveryTap


async def test_deliveries_of_every_size_arrive_whole_and_in_order(broker: Broker, queue: str):
    got: asyncio.Queue[Delivery] = asyncio.Queue()

    async def handle(delivery: Delivery) -> None:
        broker.ack(delivery)
        await got.put(delivery)

    await broker.consume(queue, handle)
    # Empty; one frame; and 300 KB, past RabbitMQ's frame size (128 KiB): three body frames.
    bodies = [b"", b'{"n": 1}', b'{"big": "' + b"x" * 300_000 + b'"}', b'{"n": 3}']
    for n, body in enumerate(bodies):
        await broker.publish(Outbound(queue, body, correlation_id=f"job:{n}", headers={"x-n": n}))
    for n, body in enumerate(bodies):
        delivery = await asyncio.wait_for(got.get(), 10)
        assert (delivery.correlation_id, delivery.body, delivery.headers) == (
            f"job:{n}",
            body,
            {"x-n": n},
        )
        assert isinstance(delivery.handle.channel.frames, DeliveryTap)  # read by the tap
