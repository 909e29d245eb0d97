"""The Node.js example worker speaks docs/protocol.md: a real RabbitMQ and a real `node` process.

The test plays the manager: it declares the step queue as the manager does (durable, no
arguments), publishes requests with the documented properties and reads the replies.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import aio_pika
import pytest

ROOT = Path(__file__).resolve().parents[3]
JS_DIR = ROOT / "examples" / "word-counts" / "js"
WORDCOUNT_PY = ROOT / "examples" / "word-counts" / "wordcount.py"
START_TIMEOUT_S = 30.0
REPLY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 15.0


@dataclass
class NodeWorker:
    """A running `node worker.js` and what it printed."""

    process: asyncio.subprocess.Process
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    readers: list[asyncio.Task[None]] = field(default_factory=list)

    def output(self) -> str:
        return "\n".join(["stdout:", *self.stdout, "stderr:", *self.stderr])

    async def stop(self) -> int:
        """SIGTERM the worker and return its exit code once it and its output have ended."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        returncode = await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT_S)
        await asyncio.gather(*self.readers)
        return returncode


async def _read_lines(
    stream: asyncio.StreamReader, lines: list[str], marker: tuple[str, asyncio.Event] | None = None
) -> None:
    """Collect `stream`'s lines; set the event once a line contains the marker text."""
    async for raw in stream:
        line = raw.decode(errors="replace").rstrip()
        lines.append(line)
        if marker is not None and marker[0] in line:
            marker[1].set()


async def _start(node: str, amqp_url: str, queue: str) -> NodeWorker:
    env = {**os.environ, "AMQP_URL": amqp_url, "QUEUE": queue}
    env.pop("AMQP_SERVER", None)
    process = await asyncio.create_subprocess_exec(
        node,
        "worker.js",
        cwd=JS_DIR,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    worker = NodeWorker(process)
    listening = asyncio.Event()
    worker.readers = [
        asyncio.create_task(
            _read_lines(process.stdout, worker.stdout, (f"listening on {queue}", listening))
        ),
        asyncio.create_task(_read_lines(process.stderr, worker.stderr)),
    ]
    started = asyncio.create_task(listening.wait())
    exited = asyncio.create_task(process.wait())
    await asyncio.wait(
        {started, exited}, timeout=START_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
    )
    started.cancel()
    exited.cancel()
    if not listening.is_set():
        if process.returncode is None:
            process.kill()
        await process.wait()
        await asyncio.gather(*worker.readers)
        pytest.fail(f"the JS worker did not start listening on {queue}:\n{worker.output()}")
    return worker


@pytest.fixture
async def start_worker(
    node: str, amqp_url: str
) -> AsyncIterator[Callable[[str], Awaitable[NodeWorker]]]:
    """Starts JS workers on given queues; kills any still running at the end."""
    workers: list[NodeWorker] = []

    async def start(queue: str) -> NodeWorker:
        worker = await _start(node, amqp_url, queue)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        if worker.process.returncode is None:
            worker.process.kill()
            await worker.process.wait()
        await asyncio.gather(*worker.readers)


@dataclass
class FakeManager:
    """The manager's side of the protocol: a step queue, a reply queue and the replies by id."""

    channel: aio_pika.abc.AbstractChannel
    step_queue: str
    reply_queue: aio_pika.abc.AbstractQueue
    replies: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage]

    async def request(self, body: bytes, correlation_id: str, attempt: int) -> None:
        await self.channel.default_exchange.publish(
            aio_pika.Message(
                body,
                correlation_id=correlation_id,
                reply_to=self.reply_queue.name,
                content_type="application/json",
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                message_id=f"{correlation_id}:{attempt}",
                headers={"x-workflow": "book-word-counts", "x-attempt": attempt},
            ),
            routing_key=self.step_queue,
        )

    async def reply(self) -> aio_pika.abc.AbstractIncomingMessage:
        return await asyncio.wait_for(self.replies.get(), REPLY_TIMEOUT_S)

    async def ready_requests(self) -> int:
        """Requests waiting in the step queue (unacked ones come back once the worker is gone)."""
        queue = await self.channel.declare_queue(self.step_queue, passive=True)
        assert queue.declaration_result.message_count is not None
        return queue.declaration_result.message_count


@pytest.fixture
async def manager(amqp_url: str, unique: str) -> AsyncIterator[FakeManager]:
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        step_queue = f"{unique}.segment-word-counts"
        # Declared exactly as the manager declares step queues: durable, no arguments.
        await channel.declare_queue(step_queue, durable=True)
        reply_queue = await channel.declare_queue(f"{unique}.replies", exclusive=True)
        replies: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage] = asyncio.Queue()
        await reply_queue.consume(replies.put, no_ack=True)
        yield FakeManager(channel, step_queue, reply_queue, replies)
        await channel.queue_delete(step_queue)
    finally:
        await connection.close()


def _python_wordcount() -> ModuleType:
    """The Python worker's word counting (examples/word-counts/wordcount.py), loaded by path."""
    spec = importlib.util.spec_from_file_location("example_wordcount", WORDCOUNT_PY)
    assert spec is not None and spec.loader is not None, f"cannot load {WORDCOUNT_PY}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Cases where tokenisers tend to differ: apostrophes (typographic too), digits, underscores,
# hyphens, other alphabets, combining marks, final sigma, dotted I, superscripts, numerals,
# and words that are also JavaScript Object.prototype names.
TEXT = (
    "It was the best of times, it was the WORST of times; Don't stop -- DON’T 'tis o'clock'' "
    "rock'n'roll lamp-room 1887 42x under_score Café cafe\u0301 ΟΔΟΣ Σ. İstanbul Straße STRASSE "
    "東京 ｆｕｌｌ x² Ⅻ ½ ٣abc४ हिन्दी constructor toString __proto__ hasOwnProperty"
)


def test_js_unit_tests_pass(node: str) -> None:
    """The worker's own `node --test` suite (word counting, input checks), so CI runs it too."""
    result = subprocess.run(
        [node, "--test"], cwd=JS_DIR, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_text_covers_the_rule() -> None:
    counts = _python_wordcount().count_words(TEXT)
    assert counts["don't"] == 2 and counts["café"] == 2 and counts["x²"] == 1
    assert "1887" not in counts and "proto" in counts


async def test_js_worker_replies_with_word_counts(
    start_worker: Callable[[str], Awaitable[NodeWorker]], manager: FakeManager, unique: str
) -> None:
    worker = await start_worker(manager.step_queue)
    correlation_id = f"0b7c6f0e-5a4e-4d8b-9f57-{unique[1:13]}:segment-word-counts"
    payload = {"section": TEXT, "book": "a tale"}

    await manager.request(json.dumps(payload).encode(), correlation_id, attempt=2)
    reply = await manager.reply()

    assert json.loads(reply.body) == {"section": _python_wordcount().count_words(TEXT)}
    assert reply.correlation_id == correlation_id
    assert reply.headers.get("x-attempt") == 2
    assert isinstance(reply.headers["x-attempt"], int)
    assert "x-error" not in reply.headers
    assert reply.content_type == "application/json"
    assert reply.delivery_mode == aio_pika.DeliveryMode.PERSISTENT

    assert await worker.stop() == 0, worker.output()
    assert await manager.ready_requests() == 0, "the request was not acked"


@pytest.mark.parametrize(
    ("body", "error_type"),
    [
        # jsworker refuses bodies that are not JSON objects before the step runs.
        (b"[1, 2, 3]", "InvalidRequest"),
        (b'"just text"', "InvalidRequest"),
        (b'{"section": 7}', "InvalidInput"),
        (b"{not json", "InvalidRequest"),
    ],
    ids=["list", "string", "section-not-text", "invalid-json"],
)
async def test_js_worker_reports_bad_input_with_x_error(
    start_worker: Callable[[str], Awaitable[NodeWorker]],
    manager: FakeManager,
    unique: str,
    body: bytes,
    error_type: str,
) -> None:
    worker = await start_worker(manager.step_queue)
    correlation_id = f"5d1f2c3a-0000-4000-8000-{unique[1:13]}:segment-word-counts"

    await manager.request(body, correlation_id, attempt=3)
    reply = await manager.reply()

    assert reply.correlation_id == correlation_id
    assert reply.headers.get("x-attempt") == 3
    error = reply.headers.get("x-error")
    assert isinstance(error, str) and error
    assert reply.headers.get("x-error-type") == error_type
    assert json.loads(reply.body) == {"error": {"type": error_type, "message": error}}

    assert await worker.stop() == 0, worker.output()
    assert await manager.ready_requests() == 0, "the failed request was not acked"
    job_id = correlation_id.partition(":")[0]
    assert any(f"job={job_id} " in line for line in worker.stderr), worker.output()


async def test_js_worker_stops_cleanly_on_sigterm_while_idle(
    start_worker: Callable[[str], Awaitable[NodeWorker]], manager: FakeManager
) -> None:
    worker = await start_worker(manager.step_queue)

    assert await worker.stop() == 0, worker.output()
    assert worker.stdout[-1].endswith("stopped"), worker.output()
    assert worker.stderr == [], worker.output()
