"""Fixtures for the bridge: a stub HTTP server, `workflow-manager bridge` processes, a caller."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aio_pika
import pytest

from ..harness import Process
from ..pyworker.conftest import Caller
from .httpserver import StubServer

BridgeFactory = Callable[..., Awaitable[Process]]


@pytest.fixture
async def http_server() -> AsyncIterator[StubServer]:
    """An echo server on 127.0.0.1; tests replace its `handler` as they need."""
    server = await StubServer().start()
    yield server
    await server.close()


@pytest.fixture
async def bridge(amqp_url: str, tmp_path: Path) -> AsyncIterator[BridgeFactory]:
    """Start `workflow-manager bridge` on a workflow file; each is stopped (exit 0) afterwards."""
    started: list[Process] = []

    async def start(
        yaml_text: str, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> Process:
        config = tmp_path / f"bridge-{len(started)}.yaml"
        config.write_text(yaml_text)
        process = await Process.start(
            "bridge",
            sys.executable, "-m", "workflow_manager", "bridge", "--config", str(config),
            "--amqp-url", amqp_url, *args,
            env=env,
        )  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        exited = process.proc.returncode is not None  # on its own: the test checked its code
        code = await process.stop()
        assert exited or code == 0, process.output


@pytest.fixture
async def caller(amqp_url: str, unique: str) -> AsyncIterator[Caller]:
    """The manager's side: publishes requests and collects replies; deletes the step queues."""
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    reply_queue = await channel.declare_queue(f"{unique}.replies", exclusive=True)
    result = Caller(channel, reply_queue, unique)

    async def collect(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await message.ack()
        result.replies.put_nowait(message)

    await reply_queue.consume(collect)
    try:
        yield result
    finally:
        for name in result.step_queues:
            await channel.queue_delete(name)
        await connection.close()
