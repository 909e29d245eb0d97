"""A broker outage seen by a real `pyworker` process: every request is answered correctly (twice
only when redelivered), the worker logs one line when the outage starts and one when it ends,
and it consumes again soon after the broker is back.

`test_requests_survive_a_broker_stop` stops RabbitMQ's app for every client on the broker: it is
marked `stops_broker`; run it alone, never beside other tests of the broker.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aio_pika
import pytest
from aio_pika.abc import AbstractIncomingMessage, AbstractRobustChannel

from amqp_outage import Outage, PromptRobustConnection, connect

from ..durability.helpers import rabbitmqctl
from ..harness import Process

WORKER_TARGET = "tests/integration/pyworker/outageworker.py:worker"
REQUESTS = 100
DELAY_S = 0.3  # 100 requests, 10 at a time: ~3 s of work, so requests are in flight at the stop
DOWN_S = 5.0  # how long the broker stays down (the chaos, not a synchronisation)
# Generous bounds (the targets are ~1 s): a loaded 2-core machine must not make them flake.
BACK_AFTER_START_APP_S = 4.0
BACK_AFTER_DROP_S = 3.0
REPLIES_TIMEOUT_S = 60.0

pytestmark = pytest.mark.skipif(
    shutil.which("rabbitmqctl") is None, reason="needs rabbitmqctl to disturb the broker"
)


@dataclass
class Replies:
    """The replies of the test's reply queue, by correlation id; a test awaits a set of ids."""

    by_id: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def on_message(self, message: AbstractIncomingMessage) -> None:
        body = json.loads(message.body)
        async with self._changed:
            answers = self.by_id.setdefault(str(message.correlation_id), [])
            # A reply redelivered to us (our ack was lost in the outage) is not a second answer.
            if not (message.redelivered and body in answers):
                answers.append(body)
            self._changed.notify_all()
        await message.ack()

    async def wait_for(self, ids: set[str], timeout_s: float) -> None:
        async def answered() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: ids <= set(self.by_id))

        try:
            await asyncio.wait_for(answered(), timeout_s)
        except TimeoutError:
            missing = ids - set(self.by_id)
            raise AssertionError(
                f"{len(missing)} of {len(ids)} requests unanswered after {timeout_s}s"
            ) from None


@dataclass
class Bench:
    """The manager's side, on a robust connection of its own (it lives through the outage)."""

    prefix: str
    connection: PromptRobustConnection
    channel: AbstractRobustChannel
    outage: Outage
    replies: Replies
    reply_queue: str

    def queue(self, step: str) -> str:
        return f"{self.prefix}.{step}"

    async def request(self, step: str, body: dict[str, Any]) -> str:
        """Publish a request (persistent, confirmed); returns its correlation id."""
        correlation_id = f"{uuid.uuid4()}:{step}"
        message = aio_pika.Message(
            json.dumps(body).encode(),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=correlation_id,
            reply_to=self.reply_queue,
            headers={"x-attempt": 1},
        )
        await self.channel.default_exchange.publish(message, routing_key=self.queue(step))
        return correlation_id

    async def batch(self, count: int, delay_s: float) -> dict[str, int]:
        """Publish `count` square requests; returns n by correlation id."""
        sent = {}
        for n in range(count):
            sent[await self.request("square", {"n": n, "delay_s": delay_s})] = n
        return sent

    async def ping(self, timeout_s: float) -> float:
        """Seconds until the worker answers a request on its idle `ping` queue."""
        loop = asyncio.get_running_loop()
        started_s = loop.time()
        correlation_id = await self.request("ping", {"ping": True})
        await self.replies.wait_for({correlation_id}, timeout_s)
        return loop.time() - started_s


@pytest.fixture
async def bench(amqp_url: str, unique: str) -> AsyncIterator[Bench]:
    outage = Outage("test bench connection")
    connection = await connect(amqp_url, name=f"outage test bench {unique}", outage=outage)
    channel = await connection.channel()
    replies = Replies()
    # Durable: replies published while the bench reconnects must not find the queue missing.
    reply_queue = await channel.declare_queue(f"{unique}.replies", durable=True)
    await reply_queue.consume(replies.on_message)
    result = Bench(unique, connection, channel, outage, replies, reply_queue.name)
    try:
        yield result
    finally:
        for name in (reply_queue.name, result.queue("square"), result.queue("ping")):
            await channel.queue_delete(name)
        await connection.close()


@pytest.fixture
async def worker(amqp_url: str, unique: str) -> AsyncIterator[Process]:
    """A `pyworker` process serving the test's `square` queue, stopped (SIGTERM) at the end."""
    process = await Process.start(
        "pyworker",
        sys.executable, "-m", "pyworker", WORKER_TARGET, "--amqp-url", amqp_url,
        "--queue-prefix", f"{unique}.",
    )  # fmt: skip
    await process.wait_for_line(r"worker consuming", 30)
    try:
        yield process
    finally:
        assert await process.stop(signal.SIGTERM, timeout_s=30) == 0, process.output


def check_replies(replies: Replies, sent: dict[str, int]) -> None:
    """Every request has its correct reply; a second reply only for a redelivered request."""
    for correlation_id, n in sent.items():
        answers = replies.by_id[correlation_id]
        for answer in answers:
            assert (answer["n"], answer["square"]) == (n, n * n), (correlation_id, answers)
        if len(answers) > 1:
            assert any(answer["redelivered"] for answer in answers[1:]), (
                f"request n={n} answered {len(answers)} times without a redelivery: {answers}"
            )


def outage_lines(process: Process) -> list[str]:
    """The worker's lines from the outage's start to its end, without per-request lines."""
    lines = process.lines
    start = next(i for i, line in enumerate(lines) if "RabbitMQ connection lost" in line)
    end = next(i for i, line in enumerate(lines) if "RabbitMQ connection restored" in line)
    return [line for line in lines[start : end + 1] if " done in " not in line]


def check_one_line_per_outage(process: Process) -> None:
    lines = outage_lines(process)
    assert len(lines) < 10, "\n".join(lines)
    assert sum("RabbitMQ connection lost" in line for line in process.lines) == 1, process.output
    assert sum("RabbitMQ connection restored" in line for line in process.lines) == 1
    assert "Traceback" not in process.output, process.output
    assert not [line for line in process.lines if " ERROR " in line], process.output


async def connection_of(worker: Process) -> str:
    """RabbitMQ's id of the worker's connection, found by its name `pyworker <host> pid=<pid>`."""
    listing = await rabbitmqctl(
        "-q", "--no-table-headers", "list_connections", "pid", "client_properties"
    )
    name = re.compile(rf'"pyworker \S+ pid={worker.proc.pid}"')
    ids = [line.split("\t")[0] for line in listing.splitlines() if name.search(line)]
    assert len(ids) == 1, f"{len(ids)} connections of worker pid {worker.proc.pid}:\n{listing}"
    return ids[0]


async def test_requests_survive_a_dropped_connection(bench, worker):
    connection_id = await connection_of(worker)
    sent = await bench.batch(40, delay_s=0.5)  # 2 s of work, 10 at a time
    loop = asyncio.get_running_loop()

    await rabbitmqctl("close_connection", connection_id, "outage test: dropped connection")
    dropped_at = loop.time()
    unanswered_at_drop = len(set(sent) - set(bench.replies.by_id))
    await worker.wait_for_line(r"RabbitMQ connection restored after", 30)
    back_s = loop.time() - dropped_at
    ping_s = await bench.ping(timeout_s=REPLIES_TIMEOUT_S)
    await bench.replies.wait_for(set(sent), REPLIES_TIMEOUT_S)

    check_replies(bench.replies, sent)
    check_one_line_per_outage(worker)
    assert re.search(r"RabbitMQ connection lost \(.*outage test: dropped connection", worker.output)
    assert unanswered_at_drop >= 5, f"only {unanswered_at_drop} requests open at the drop"
    assert back_s < BACK_AFTER_DROP_S, f"reconnected {back_s:.1f}s after the drop"
    assert ping_s < REPLIES_TIMEOUT_S


@pytest.mark.stops_broker
@pytest.mark.timeout(180)
async def test_requests_survive_a_broker_stop(bench, worker):
    sent = await bench.batch(REQUESTS, delay_s=DELAY_S)
    loop = asyncio.get_running_loop()
    try:
        await rabbitmqctl("stop_app")
        unanswered_at_stop = len(set(sent) - set(bench.replies.by_id))
        await asyncio.sleep(DOWN_S)
    finally:
        await rabbitmqctl("start_app")
        await rabbitmqctl("await_startup")
    started_at = loop.time()
    assert unanswered_at_stop >= 10, f"only {unanswered_at_stop} requests open at the stop"

    await worker.wait_for_line(r"RabbitMQ connection restored after", 30)
    worker_back_s = loop.time() - started_at
    await bench.outage.wait_connected(timeout_s=30)
    ping_s = await bench.ping(timeout_s=REPLIES_TIMEOUT_S)
    await bench.replies.wait_for(set(sent), REPLIES_TIMEOUT_S)

    check_replies(bench.replies, sent)
    check_one_line_per_outage(worker)
    # The line names the cause as `Type: message`: mostly the broker's close (CONNECTION_FORCED);
    # a reply published as the broker stops can meet the closing connection first (once in CI,
    # under load), and then that error is the cause.
    [lost] = [line for line in worker.lines if "RabbitMQ connection lost (" in line]
    assert re.search(r"lost \([A-Za-z_.]+: .+\); reconnecting", lost), lost
    assert worker_back_s < BACK_AFTER_START_APP_S, (
        f"the worker consumed again {worker_back_s:.1f}s after start_app returned"
    )
    assert ping_s < BACK_AFTER_START_APP_S, f"a ping took {ping_s:.1f}s after the outage"
