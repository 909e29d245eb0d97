"""Fixtures for the conformance kit's tests: worker processes of any kind on unique queues."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aio_pika
import pytest

from ..harness import ROOT, Process
from .kinds import WorkerKind

StartWorker = Callable[[WorkerKind], Awaitable[tuple[str, Process]]]


@pytest.fixture
def payload_store(tmp_path: Path) -> str:
    """`NAME=URL` of a `file://` payload store of this test's, for the workers and the kit."""
    root = tmp_path / "payloads"
    root.mkdir()
    return f"conformance=file://{root}"


@pytest.fixture
async def start_worker(
    amqp_url: str, unique: str, payload_store: str
) -> AsyncIterator[StartWorker]:
    """Start a worker kind on a queue of this test's, with this test's payload store; stopped
    and its queue deleted after."""
    started: list[tuple[str, Process]] = []

    async def start(kind: WorkerKind) -> tuple[str, Process]:
        queue = f"{unique}.{kind.name}"
        env = kind.environment(queue, amqp_url, payload_store)
        process = await Process.start(kind.name, *kind.argv(queue), env=env, cwd=ROOT / kind.cwd)
        started.append((queue, process))
        await process.wait_for_line(rf"listening on {re.escape(queue)}")
        return queue, process

    yield start
    for _queue, process in started:  # first, so a broker hiccup here cannot leave them running
        await process.stop()
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        for queue, _process in started:
            await channel.queue_delete(queue)
