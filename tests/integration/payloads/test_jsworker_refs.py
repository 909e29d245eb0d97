"""jsworker and payloads by reference (docs/protocol.md, "Payloads by reference"): the real echo
worker (jsworker/examples/echo.js) on the real RabbitMQ resolves a request's references from a
real store before its handler runs, and stores a large reply's values as references.

Requests are shaped as the manager shapes them: correlation_id `<job-uuid>:<step>`, a reply_to
of the test's own, `x-payload-refs` when the body holds references.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aio_pika
import psycopg
import pytest

from tests.pgdatabase import fresh_database

from ..harness import ROOT, Process, take_one

JSWORKER_DIR = ROOT / "jsworker"
ECHO = "jsworker/examples/echo.js"
STEP = "echo"
REPLY_TIMEOUT_S = 60  # the 100 MB round trip takes a few seconds; a lost reply fails, not hangs
BIG_ROWS = 1_000_000  # rows of ~105 bytes: a JSON value of about 100 MB
FILLER = b"q" * 90


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def node_ready() -> None:
    """Node.js with jsworker's dependencies (amqplib, pg) installed; `npm ci` when they are not."""
    if shutil.which("node") is None:
        _missing("`node` is not installed (jsworker needs Node.js 18+ and npm)")
    modules = JSWORKER_DIR / "node_modules"
    if (modules / "amqplib").is_dir() and (modules / "pg").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        _missing("`npm` is not installed (jsworker needs Node.js 18+ and npm)")
        return
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=JSWORKER_DIR, capture_output=True,
        text=True, timeout=90, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"npm ci failed:\n{result.stdout}\n{result.stderr}"


def header(message: aio_pika.abc.AbstractIncomingMessage, name: str) -> Any:
    """A header of `message`, text decoded."""
    value = (message.headers or {}).get(name)
    return value.decode() if isinstance(value, bytes) else value


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def reference(store: str, job: str, data: bytes) -> dict[str, Any]:
    """The reference to `data` stored under `<job>/<sha256>` in `store`."""
    digest = sha256(data)
    return {"$ref": f"wm://{store}/{job}/{digest}", "sha256": digest, "size": len(data)}


def put_file(root: Path, job: str, data: bytes) -> dict[str, Any]:
    """Store `data` in a file store as the spec lays it out (`<dir>/<job>/<sha256>`)."""
    (root / job).mkdir(parents=True, exist_ok=True)
    (root / job / sha256(data)).write_bytes(data)
    return reference("main", job, data)


def compact(value: Any) -> bytes:
    """`value` as JSON text the way JSON.stringify writes it (ASCII content, no spaces)."""
    return json.dumps(value, separators=(",", ":")).encode()


@dataclass
class Echo:
    """One echo worker on a queue of the test's, and an exclusive queue for its replies."""

    queue: str
    process: Process
    channel: aio_pika.abc.AbstractChannel
    replies: aio_pika.abc.AbstractQueue

    async def ask(
        self, body: bytes, job: str, refs: int | None = None
    ) -> aio_pika.abc.AbstractIncomingMessage:
        """Send one request for `job` as the manager would; the reply to it."""
        headers: dict[str, Any] = {"x-attempt": 1, "x-workflow": "payloads"}
        if refs is not None:
            headers["x-payload-refs"] = refs
        message = aio_pika.Message(
            body, correlation_id=f"{job}:{STEP}", reply_to=self.replies.name,
            message_id=f"{job}:{STEP}:1", content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT, headers=headers,
        )  # fmt: skip
        await self.channel.default_exchange.publish(message, self.queue)
        reply = await take_one(self.replies, REPLY_TIMEOUT_S)
        assert reply.correlation_id == f"{job}:{STEP}"
        return reply

    async def stop(self) -> int:
        """Stop the worker gracefully (it drains and acks first); its exit code."""
        return await self.process.stop()


StartEcho = Callable[[dict[str, str]], Awaitable[Echo]]


@pytest.fixture
async def start_echo(amqp_url: str, unique: str, node_ready: None) -> AsyncIterator[StartEcho]:
    """Start jsworker's echo worker with `env` added; stopped and its queue deleted after."""
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    started: list[Echo] = []

    async def start(env: dict[str, str]) -> Echo:
        queue = f"{unique}.echo{len(started)}"
        process = await Process.start(
            "jsworker echo", "node", ECHO, env={"QUEUE": queue, "AMQP_URL": amqp_url, **env}
        )
        replies = await channel.declare_queue(exclusive=True)
        echo = Echo(queue, process, channel, replies)
        started.append(echo)
        await process.wait_for_line(rf"listening on {re.escape(queue)}")
        return echo

    yield start
    for echo in started:
        code = await echo.stop()
        assert code == 0, f"the echo worker exited with {code}:\n{echo.process.output}"
    for echo in started:
        await channel.queue_delete(echo.queue)
    await connection.close()


def big_value() -> bytes:
    """About 100 MB of JSON text: a list of a million small objects."""
    rows = (b'{"i":%d,"t":"%s"}' % (i, FILLER) for i in range(BIG_ROWS))
    return b"[" + b",".join(rows) + b"]"


async def test_a_100_mb_value_goes_to_the_worker_and_back_by_reference(
    start_echo: StartEcho, tmp_path: Path
) -> None:
    store = tmp_path / "payloads"
    store.mkdir()
    echo = await start_echo({"WM_PAYLOAD_STORES": f"main=file://{store}"})
    data = big_value()
    assert len(data) > 100_000_000
    # Stored by another job (a parent's trigger, say), so the reply's key is a new file.
    ref = put_file(store, str(uuid.uuid4()), data)
    job = str(uuid.uuid4())

    reply = await echo.ask(json.dumps({"data": ref, "n": 1}).encode(), job, refs=1)

    assert header(reply, "x-error") is None, header(reply, "x-error")
    assert header(reply, "x-payload-refs") == 1
    body = json.loads(reply.body)
    assert body == {"data": reference("main", job, data), "n": 1}
    stored = (store / job / sha256(data)).read_bytes()
    assert sha256(stored) == sha256(data)
    assert not [p.name for p in (store / job).iterdir() if p.name != sha256(data)], "a temp file"


PG_THRESHOLD = 4096


def _rows(url: str) -> dict[str, tuple[str, str, int, bytes]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT key, job_id, sha256, size, value FROM wm_payloads").fetchall()
    return {key: (job_id, digest, size, bytes(value)) for key, job_id, digest, size, value in rows}


async def test_values_go_through_a_postgresql_store(start_echo: StartEcho) -> None:
    with fresh_database() as url:
        echo = await start_echo(
            {"WM_PAYLOAD_STORES": f"pg={url}", "WM_PAYLOAD_REF_THRESHOLD": str(PG_THRESHOLD)}
        )
        value = {"words": [f"word{i}" for i in range(2000)]}
        data = compact(value)
        assert len(data) > PG_THRESHOLD

        # An inline reply over the threshold: the worker creates the table and stores the value.
        first = str(uuid.uuid4())
        reply = await echo.ask(json.dumps({"data": value, "n": 1}).encode(), first)
        assert header(reply, "x-error") is None, header(reply, "x-error")
        assert header(reply, "x-payload-refs") == 1
        ref = reference("pg", first, data)
        assert json.loads(reply.body) == {"data": ref, "n": 1}
        key = f"{first}/{sha256(data)}"
        assert _rows(url) == {key: (first, sha256(data), len(data), data)}

        # That reference in a request: resolved from PostgreSQL, echoed, stored again.
        second = str(uuid.uuid4())
        reply = await echo.ask(json.dumps({"data": ref, "n": 2}).encode(), second, refs=1)
        assert header(reply, "x-error") is None, header(reply, "x-error")
        assert json.loads(reply.body) == {"data": reference("pg", second, data), "n": 2}
        rows = _rows(url)
        assert rows[f"{second}/{sha256(data)}"] == (second, sha256(data), len(data), data)
        assert len(rows) == 2
        await echo.stop()  # before the database is dropped under its connections


async def test_a_reference_that_cannot_be_resolved_gets_a_payload_ref_error(
    start_echo: StartEcho, tmp_path: Path, amqp_url: str
) -> None:
    store = tmp_path / "payloads"
    store.mkdir()
    echo = await start_echo({"WM_PAYLOAD_STORES": f"main=file://{store}"})
    job = str(uuid.uuid4())
    missing = reference("main", job, b'"never stored"')
    elsewhere = reference("elsewhere", job, b'"never stored"')
    expected = {
        missing["$ref"]: f"PayloadRefError: {missing['$ref']}: not found in file://{store}",
        elsewhere["$ref"]: (
            f"PayloadRefError: {elsewhere['$ref']}: "
            'no payload store named "elsewhere" here (configured: main)'
        ),
    }

    for ref in (missing, elsewhere):
        body = json.dumps({"items": [{"data": ref}], "n": 1}).encode()
        reply = await echo.ask(body, job, refs=1)
        assert header(reply, "x-error-type") == "PayloadRefError"
        assert header(reply, "x-error") == expected[ref["$ref"]]
        assert json.loads(reply.body) == {
            "error": {"type": "PayloadRefError", "message": expected[ref["$ref"]]}
        }

    # Acked, not requeued: after a graceful stop (which would return anything unacked), the
    # queue is empty.
    assert await echo.stop() == 0
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        queue = await (await connection.channel()).declare_queue(echo.queue, passive=True)
        assert queue.declaration_result.message_count == 0
    assert "PayloadRefError" in echo.process.output  # one warning line per failed step


async def test_a_bad_store_setting_stops_the_worker_at_start(unique: str, amqp_url: str) -> None:
    process = await Process.start(
        "jsworker echo", "node", ECHO,
        env={"QUEUE": f"{unique}.echo", "AMQP_URL": amqp_url, "WM_PAYLOAD_STORES": "main"},
    )  # fmt: skip
    assert await process.exited() == 1
    assert (
        'echo: error: environment variable WM_PAYLOAD_STORES: entry "main" is not NAME=URL'
        in process.output
    )
    assert "    at " not in process.output  # a message, not a stack trace
