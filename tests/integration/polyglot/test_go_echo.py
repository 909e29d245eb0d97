"""goworker's echo example keeps the conformance "echo" contract (see the shared brief)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aio_pika
import pytest

from ..harness import Process
from .conftest import GOWORKER_DIR, run_go

REPLY_TIMEOUT_S = 15.0


@pytest.fixture(scope="session")
def echo_binary(go: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """goworker/examples/echo, built once per session."""
    binary = tmp_path_factory.mktemp("go-echo") / "echo"
    run_go(go, GOWORKER_DIR, "build", "-o", str(binary), "./examples/echo")
    return binary


async def test_echo_replies_fails_on_request_and_drains(echo_binary, amqp_url, unique):
    queue = f"{unique}.go-echo"
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        await channel.declare_queue(queue, durable=True)
        replies = await channel.declare_queue(exclusive=True)
        worker = await Process.start(
            "go echo", str(echo_binary), env={"QUEUE": queue, "AMQP_URL": amqp_url}
        )
        try:
            await worker.wait_for_line(f"listening on {queue}")
            for i, body in enumerate([{"a": [1, "é"], "n": 12345678901234567890}, {"fail": True}]):
                message = aio_pika.Message(
                    json.dumps(body).encode(), correlation_id=f"job:{i}",
                    reply_to=replies.name, headers={"x-attempt": 1},
                )  # fmt: skip
                await channel.default_exchange.publish(message, queue)
            got = []
            async with replies.iterator(timeout=REPLY_TIMEOUT_S) as messages:
                async for reply in messages:
                    await reply.ack()
                    got.append(reply)
                    if len(got) == 2:
                        break
            by_id = {reply.correlation_id: reply for reply in got}
            assert json.loads(by_id["job:0"].body) == {"a": [1, "é"], "n": 12345678901234567890}
            assert "x-error" not in by_id["job:0"].headers
            assert "asked to fail" in by_id["job:1"].headers["x-error"]
        finally:
            code = await asyncio.shield(worker.stop())
            await channel.queue_delete(queue)
        assert code == 0, worker.output
        assert any("worker stopped" in line for line in worker.lines), worker.output
