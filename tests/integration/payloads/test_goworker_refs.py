"""goworker's payloads by reference (docs/protocol.md), end to end: the real Go echo worker on
the real RabbitMQ resolves references from a file or PostgreSQL store, stores its large replies
there, and answers a reference it cannot resolve with a PayloadRefError reply."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aio_pika
import psycopg
import pytest

from tests.integration.harness import Process, take_one
from tests.integration.polyglot.conftest import GOWORKER_DIR, run_go
from tests.pgdatabase import fresh_database

REPLY_TIMEOUT_S = 60.0  # the 100 MB round trip reads, hashes, parses and writes 100 MB twice
PACKAGED_SOURCES = (
    Path("/usr/share/gocode/src/github.com/rabbitmq/amqp091-go"),
    Path("/usr/share/gocode/src/github.com/lib/pq"),
)

StartEcho = Callable[[dict[str, str]], Awaitable[tuple[Process, str]]]


@pytest.fixture(scope="session")
def go_refs_echo_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """goworker/examples/echo, built once, offline, against Debian's packaged sources."""
    go = _go_or_skip()
    binary = tmp_path_factory.mktemp("go-refs-echo") / "echo"
    run_go(go, GOWORKER_DIR, "build", "-o", str(binary), "./examples/echo")
    return binary


def _go_or_skip() -> str:
    missing = [str(p) for p in PACKAGED_SOURCES if not (p / "go.mod").is_file()]
    go = shutil.which("go")
    if go is None or missing:
        message = f"Go or {missing} is missing; run scripts/setup.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return go


@pytest.fixture
async def go_channel(amqp_url: str) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    """The test's own AMQP channel (it plays the manager)."""
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        yield await connection.channel()


@pytest.fixture
async def go_refs_echo(
    go_refs_echo_binary: Path,
    go_channel: aio_pika.abc.AbstractChannel,
    amqp_url: str,
    unique: str,
) -> AsyncIterator[StartEcho]:
    """Start the Go echo worker with the given environment on a queue of this test's own; the
    worker and queue are returned. Stopped (drained, exit 0) and the queue deleted after."""
    started: list[tuple[Process, str]] = []

    async def start(env: dict[str, str]) -> tuple[Process, str]:
        queue = f"{unique}.go-refs-{len(started)}"
        await go_channel.declare_queue(queue, durable=True)
        worker = await Process.start(
            "go echo", str(go_refs_echo_binary), env={"QUEUE": queue, "AMQP_URL": amqp_url, **env}
        )
        started.append((worker, queue))
        await worker.wait_for_line(f"listening on {queue}")
        return worker, queue

    yield start
    for worker, queue in started:
        if worker.proc.returncode is None:
            assert await asyncio.shield(worker.stop()) == 0, worker.output
        await go_channel.queue_delete(queue)


def ref_to(store: str, job: str, text: bytes) -> dict[str, Any]:
    """The reference a party storing `text` for `job` in `store` writes."""
    digest = hashlib.sha256(text).hexdigest()
    return {"$ref": f"wm://{store}/{job}/{digest}", "sha256": digest, "size": len(text)}


def put_file(root: Path, ref: dict[str, Any], text: bytes) -> None:
    """Store `text` under `ref` in the file store at `root`, as the manager would."""
    path = root / ref["$ref"].split("/", 3)[3]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)


async def request(
    channel: aio_pika.abc.AbstractChannel, queue: str, body: dict[str, Any], job: str
) -> aio_pika.abc.AbstractIncomingMessage:
    """Send `body` to the worker as the manager does (x-payload-refs when it holds references)
    and return the reply."""
    replies = await channel.declare_queue(exclusive=True)
    text = json.dumps(body, separators=(",", ":")).encode()
    headers: dict[str, Any] = {"x-attempt": 1}
    if refs := text.count(b'"$ref":'):
        headers["x-payload-refs"] = refs
    message = aio_pika.Message(
        text, correlation_id=f"{job}:echo", reply_to=replies.name, headers=headers,
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
    )  # fmt: skip
    await channel.default_exchange.publish(message, queue)
    reply = await take_one(replies, REPLY_TIMEOUT_S)
    assert reply.correlation_id == f"{job}:echo"
    return reply


def header(message: aio_pika.abc.AbstractMessage, name: str) -> Any:
    """A reply header, text decoded."""
    value = (message.headers or {}).get(name)
    return value.decode() if isinstance(value, bytes) else value


async def test_a_100_mb_value_round_trips_through_a_file_store(
    go_refs_echo: StartEcho, go_channel: aio_pika.abc.AbstractChannel, tmp_path: Path
) -> None:
    # {"rows": [100,000 strings of 1 KB], "title": "big"} as compact JSON with sorted keys, the
    # way Go writes it too (so the stored reply is the very same bytes); joined, not dumped, as
    # that is ten times faster.
    rows = ",".join(f'"row {i:07d} {"x" * 1000}"' for i in range(100_000))
    text = f'{{"rows":[{rows}],"title":"big"}}'.encode()
    assert len(text) > 100_000_000
    source_job, job = str(uuid.uuid4()), str(uuid.uuid4())
    ref = ref_to("main", source_job, text)  # the value a previous job stored
    put_file(tmp_path, ref, text)
    _, queue = await go_refs_echo({"WM_PAYLOAD_STORES": f"main=file://{tmp_path}"})

    reply = await request(go_channel, queue, {"data": ref, "n": 1}, job)

    assert header(reply, "x-error") is None, header(reply, "x-error")
    body = json.loads(reply.body)
    assert body == {"data": ref_to("main", job, text), "n": 1}
    assert header(reply, "x-payload-refs") == 1
    stored = (tmp_path / job / ref["sha256"]).read_bytes()
    assert hashlib.sha256(stored).hexdigest() == ref["sha256"]
    assert len(reply.body) < 1000


async def test_values_round_trip_through_a_postgresql_store(
    go_refs_echo: StartEcho, go_channel: aio_pika.abc.AbstractChannel
) -> None:
    value = {"words": ["réponse"] * 800}
    with fresh_database() as url:
        worker, queue = await go_refs_echo(
            {"WM_PAYLOAD_STORES": f"pg={url}", "WM_PAYLOAD_REF_THRESHOLD": "1024"}
        )
        # An inline value over the threshold: the worker creates the table and stores it.
        first_job, second_job = str(uuid.uuid4()), str(uuid.uuid4())
        reply = await request(go_channel, queue, {"data": value, "n": 1}, first_job)
        assert header(reply, "x-error") is None, header(reply, "x-error")
        first = json.loads(reply.body)
        stored_ref = first["data"]
        assert first["n"] == 1 and stored_ref["$ref"].startswith(f"wm://pg/{first_job}/")
        # That reference in a request: resolved, echoed, stored again under the new job.
        reply = await request(go_channel, queue, {"data": stored_ref, "n": 2}, second_job)
        assert header(reply, "x-error") is None, header(reply, "x-error")
        second = json.loads(reply.body)
        assert second["n"] == 2
        assert second["data"]["$ref"] == f"wm://pg/{second_job}/{stored_ref['sha256']}"
        assert await worker.stop() == 0, worker.output
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT key, job_id, sha256, size, value FROM wm_payloads ORDER BY stored_at"
            ).fetchall()
    assert [row[1] for row in rows] == [first_job, second_job]
    for key, _, digest, size, data in rows:
        assert key.endswith(f"/{digest}") and size == len(data) == stored_ref["size"]
        assert hashlib.sha256(data).hexdigest() == digest == stored_ref["sha256"]
        assert json.loads(data) == value


async def test_unresolvable_references_get_a_payload_ref_error_reply(
    go_refs_echo: StartEcho, go_channel: aio_pika.abc.AbstractChannel, tmp_path: Path
) -> None:
    worker, queue = await go_refs_echo({"WM_PAYLOAD_STORES": f"main=file://{tmp_path}"})
    job = str(uuid.uuid4())
    missing = ref_to("main", job, b'"never stored"')
    elsewhere = ref_to("other", job, b'"somewhere else"')
    cases = [
        (missing, f"not found in file://{tmp_path}"),
        (elsewhere, 'no store named "other": this worker\'s stores are main (WM_PAYLOAD_STORES)'),
    ]
    for ref, why in cases:
        reply = await request(go_channel, queue, {"gathered": [{"data": ref}]}, job)
        assert header(reply, "x-error-type") == "PayloadRefError"
        assert header(reply, "x-error") == f"PayloadRefError: {ref['$ref']}: {why}"
        assert json.loads(reply.body)["error"]["type"] == "PayloadRefError"
    # Acked, not requeued: once the worker has drained, nothing is left in its queue.
    assert await worker.stop() == 0, worker.output
    left = await go_channel.declare_queue(queue, durable=True, passive=True)
    assert left.declaration_result.message_count == 0
