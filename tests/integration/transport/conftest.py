"""A connected `Broker` for a test, and its queue `<unique>.q`, both gone after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aio_pika
import pytest

from workflow_manager.transport import Broker


@pytest.fixture
def queue(unique: str) -> str:
    """This test's queue name (deleted after the test, if it is still there)."""
    return f"{unique}.q"


@pytest.fixture
async def broker(amqp_url: str, queue: str) -> AsyncIterator[Broker]:
    """A broker connected to RabbitMQ with `queue` declared; closed, and the queue deleted,
    after the test (closing twice is harmless: a test may close it itself)."""
    connected = Broker(amqp_url, prefetch=10)
    await connected.connect()
    try:
        await connected.declare([queue])
        yield connected
    finally:
        await connected.close()
        connection = await aio_pika.connect(amqp_url)
        try:
            await (await connection.channel()).queue_delete(queue)
        finally:
            await connection.close()
