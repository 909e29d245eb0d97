"""Publishes framed in batches, against the real broker: every message of a batch arrives once,
in order, with its properties; a returned one fails alone; a closed channel fails the batch."""

from __future__ import annotations

import asyncio

import aio_pika
import pytest

from workflow_manager.errors import BrokerError, Unroutable
from workflow_manager.transport import Outbound


async def _drain(
    amqp_url: str, queue: str, count: int
) -> list[aio_pika.abc.AbstractIncomingMessage]:
    """The first `count` messages of `queue`, acked, and nothing after them."""
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        declared = await channel.declare_queue(queue, durable=True)
        got = []
        for _ in range(count):
            message = await declared.get(timeout=5)
            await message.ack()
            got.append(message)
        assert await declared.get(fail=False) is None  # nothing more, nothing twice
        return got
    finally:
        await connection.close()


async def test_a_batch_of_one_tick_arrives_whole_in_order_with_its_properties(
    amqp_url, unique, broker, queue
):
    big = b'"' + b"x" * 300_000 + b'"'  # more than one body frame
    messages = [
        Outbound(
            queue,
            big if index == 3 else f'{{"n": {index}}}'.encode(),
            correlation_id=f"job:{index}",
            reply_to=f"{unique}.replies",
            headers={"x-attempt": index},
            message_id=f"{unique}-{index}" if index % 2 else None,
            priority=index % 3,
        )
        for index in range(600)
    ]
    # All started in one tick: one batch (and more publishes than the write queue holds).
    await asyncio.gather(*(broker.publish(message) for message in messages))
    got = await _drain(amqp_url, queue, len(messages))
    assert [m.correlation_id for m in got] == [f"job:{i}" for i in range(600)]
    assert got[3].body == big and got[5].body == b'{"n": 5}'
    assert got[5].message_id == f"{unique}-5" and got[4].message_id  # one was made for it
    assert got[7].headers == {"x-attempt": 7} and got[7].reply_to == f"{unique}.replies"
    assert got[7].content_type == "application/json" and got[7].delivery_mode == 2
    assert got[7].priority == 1 and not got[6].priority


async def test_an_unroutable_message_fails_alone_and_the_rest_of_its_batch_arrives(
    amqp_url, unique, broker, queue
):
    good = [Outbound(queue, b"{}", correlation_id=f"c{i}") for i in range(5)]
    lost = Outbound(f"{unique}.nowhere", b"{}", correlation_id="lost")
    outcomes = await asyncio.gather(
        *(broker.publish(m) for m in [*good[:2], lost, *good[2:]]), return_exceptions=True
    )
    assert isinstance(outcomes[2], Unroutable)
    assert [o for i, o in enumerate(outcomes) if i != 2] == [None] * 5
    got = await _drain(amqp_url, queue, 5)
    assert [m.correlation_id for m in got] == [f"c{i}" for i in range(5)]


async def test_publishing_on_a_closed_connection_fails_every_message_as_a_broker_error(
    broker, queue
):
    await broker.close()
    with pytest.raises(BrokerError):
        await broker.publish(Outbound(queue, b"{}"))
    with pytest.raises(BrokerError):
        await broker.publish_unconfirmed(Outbound("", b"{}", exchange="amq.topic"))


async def test_run_events_go_out_unconfirmed_in_order(amqp_url, unique, broker):
    exchange = f"{unique}.events"
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    declared_exchange = await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC)
    listener = await channel.declare_queue(f"{unique}.listener", exclusive=True)
    await listener.bind(declared_exchange, routing_key="#")
    try:
        for index in range(50):
            await broker.publish_unconfirmed(
                Outbound(f"wf.e{index}", f"{index}".encode(), exchange=exchange)
            )
        # Consumed, not fetched: an unconfirmed publish returns before RabbitMQ has routed it.
        got = []
        async with listener.iterator(timeout=10, no_ack=True) as arriving:
            async for message in arriving:
                got.append(message)
                if len(got) == 50:
                    break
        assert [m.body for m in got] == [f"{i}".encode() for i in range(50)]
    finally:
        await declared_exchange.delete()
        await connection.close()


async def test_a_message_that_cannot_be_framed_fails_alone_and_the_rest_arrive_confirmed(
    amqp_url, broker, queue
):
    good = [Outbound(queue, b"{}", correlation_id=f"c{i}") for i in range(4)]
    too_long = Outbound(queue, b"{}", correlation_id="x" * 300)  # over a short string
    odd_header = Outbound(queue, b"{}", correlation_id="odd", headers={"h": object()})
    batch = [good[0], too_long, good[1], odd_header, good[2], good[3]]
    outcomes = await asyncio.gather(*(broker.publish(m) for m in batch), return_exceptions=True)
    # The channel's numbering stayed right: a later publish is confirmed as its own.
    await broker.publish(Outbound(queue, b"{}", correlation_id="after"))
    assert isinstance(outcomes[1], ValueError) and "255 bytes" in str(outcomes[1])
    assert isinstance(outcomes[3], Exception) and not isinstance(outcomes[3], BrokerError)
    assert [outcomes[i] for i in (0, 2, 4, 5)] == [None] * 4
    got = await _drain(amqp_url, queue, 5)
    assert [m.correlation_id for m in got] == ["c0", "c1", "c2", "c3", "after"]
