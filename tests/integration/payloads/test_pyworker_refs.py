"""Payloads by reference through pyworker, its exec worker and the HTTP bridge: real RabbitMQ,
real worker processes (started as the conformance kit starts them), a real file store and a real
PostgreSQL store. The test plays the manager: it stores a value, publishes a request holding its
reference (with `x-payload-refs`) and reads the reply's reference back from the store."""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aio_pika
import orjson
import pytest

from payload_refs import FileStore, PayloadStore, Ref, as_ref
from payload_refs.pgstore import PostgresStore
from tests.pgdatabase import fresh_database

from ..conformance.kinds import GOOD_WORKERS, WorkerKind
from ..harness import ROOT, Process, take_one

KINDS = {kind.name: kind for kind in GOOD_WORKERS}
PY_KINDS = ["pyworker", "exec", "http-bridge"]  # the three built on pyworker
BIG_BYTES = 100 * 1024 * 1024
STEP = "echo"

Start = Callable[..., Awaitable[tuple[str, Process]]]


@pytest.fixture
async def channel(amqp_url: str) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    """A channel of the test's own, as the manager's."""
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        yield await connection.channel()


@pytest.fixture
async def start_worker(
    amqp_url: str, unique: str, channel: aio_pika.abc.AbstractChannel
) -> AsyncIterator[Start]:
    """start(kind, env) -> (queue, process): a worker kind on a queue of this test's, with
    `env` added (its payload stores); stopped and its queue deleted after."""
    started: list[tuple[str, Process]] = []

    async def start(kind: WorkerKind, env: dict[str, str]) -> tuple[str, Process]:
        queue = f"{unique}.{kind.name}"
        full_env = {"QUEUE": queue, "AMQP_URL": amqp_url, **kind.env, **env}
        process = await Process.start(
            kind.name, *kind.argv(queue), env=full_env, cwd=ROOT / kind.cwd
        )
        started.append((queue, process))
        await process.wait_for_line(rf"listening on {re.escape(queue)}", timeout_s=60)
        return queue, process

    yield start
    for _queue, process in started:
        await process.stop()
    for queue, _process in started:
        await channel.queue_delete(queue)


async def request(
    channel: aio_pika.abc.AbstractChannel,
    queue: str,
    reply_queue: aio_pika.abc.AbstractQueue,
    body: dict[str, Any],
    job_id: str,
) -> None:
    """Publish a request as the manager does: `x-payload-refs` counting the body's `$ref`s."""
    encoded = orjson.dumps(body)
    message = aio_pika.Message(
        encoded,
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        correlation_id=f"{job_id}:{STEP}",
        message_id=f"{job_id}:{STEP}:1",
        reply_to=reply_queue.name,
        headers={
            "x-attempt": 1,
            "x-workflow": "payloads",
            "x-payload-refs": encoded.count(b'"$ref":'),
        },
    )
    await channel.default_exchange.publish(message, routing_key=queue)


async def sha256_of(store: PayloadStore, ref: Ref) -> tuple[str, int]:
    """The SHA-256 and size of the bytes `ref` names in `store`, read in pieces."""
    digest, size = hashlib.sha256(), 0
    async for piece in store.chunks(ref):
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size


def big_value() -> bytes:
    """About 100 MB of JSON text: a string of varied ASCII, so no encoder escapes any of it."""
    line = b"".join(
        b"%08d abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ|" % i for i in range(1000)
    )
    body = line * (BIG_BYTES // len(line))
    return b'"' + body + b'"'


async def round_trip(
    start_worker: Start,
    channel: aio_pika.abc.AbstractChannel,
    kind: str,
    store: PayloadStore,
    env: dict[str, str],
    data: bytes,
) -> tuple[Ref, Ref, aio_pika.abc.AbstractIncomingMessage, float]:
    """Store `data` for one job, send its reference to `kind` for another job, and return the
    original reference, the reply's reference for "data", the reply and the seconds it took."""
    queue, _process = await start_worker(KINDS[kind], env)
    source_job, job = str(uuid.uuid4()), str(uuid.uuid4())
    original = await store.put(source_job, data)  # another job's value, as a parent's would be
    reply_queue = await channel.declare_queue(exclusive=True)
    started = time.monotonic()
    await request(channel, queue, reply_queue, {"data": original.to_json(), "n": 1}, job)
    reply = await take_one(reply_queue, timeout_s=120)
    elapsed = time.monotonic() - started
    assert "x-error" not in (reply.headers or {}), reply.headers
    assert reply.correlation_id == f"{job}:{STEP}"
    body = json.loads(reply.body)
    assert body["n"] == 1  # small: inline
    echoed = as_ref(body["data"])
    assert echoed is not None, f"'data' came back inline ({len(reply.body)} bytes)"
    assert reply.headers["x-payload-refs"] == 1
    assert echoed.store == original.store
    assert echoed.key == f"{job}/{original.sha256}"  # stored by the worker, for its own job
    return original, echoed, reply, elapsed


@pytest.mark.parametrize(
    "kind",
    [
        "pyworker",
        # echo.sh alone takes ~9 s to read and print 100 MB through the shell
        pytest.param("exec", marks=pytest.mark.slow),
        "http-bridge",
    ],
)
async def test_a_100_mb_value_goes_by_reference_both_ways(
    kind: str, start_worker: Start, channel: aio_pika.abc.AbstractChannel, tmp_path: Path
) -> None:
    store = FileStore("main", tmp_path / "payloads")
    data = big_value()
    env = {"WM_PAYLOAD_STORES": f"main=file://{store.root}"}

    original, echoed, reply, elapsed = await round_trip(
        start_worker, channel, kind, store, env, data
    )

    assert len(reply.body) < 1024  # the 100 MB stayed out of RabbitMQ
    assert (echoed.sha256, echoed.size) == (original.sha256, original.size)
    assert await sha256_of(store, echoed) == (original.sha256, len(data))
    assert (store.root / echoed.key).is_file()
    print(f"{kind}: 100 MB round trip in {elapsed:.1f}s")


@pytest.mark.parametrize("kind", PY_KINDS)
async def test_a_postgresql_store_round_trip(
    kind: str, start_worker: Start, channel: aio_pika.abc.AbstractChannel
) -> None:
    with fresh_database() as url:
        store = PostgresStore("pg", url)
        try:
            data = orjson.dumps({"rows": [f"row {i}" for i in range(400)]})
            env = {"WM_PAYLOAD_STORES": f"pg={url}", "WM_PAYLOAD_REF_THRESHOLD": "1500"}

            original, echoed, _reply, _ = await round_trip(
                start_worker, channel, kind, store, env, data
            )

            assert await store.get(echoed) == data
            assert echoed.sha256 == original.sha256
        finally:
            await store.close()


@pytest.mark.parametrize("kind", PY_KINDS)
async def test_a_reference_that_cannot_resolve_is_an_x_error_and_is_not_requeued(
    kind: str, start_worker: Start, channel: aio_pika.abc.AbstractChannel, tmp_path: Path
) -> None:
    store = FileStore("main", tmp_path / "payloads")
    queue, process = await start_worker(
        KINDS[kind], {"WM_PAYLOAD_STORES": f"main=file://{store.root}"}
    )
    present = await store.put(str(uuid.uuid4()), b'"here"')
    missing = Ref("main", f"{uuid.uuid4()}/{'0' * 64}", "0" * 64, 10)
    elsewhere = Ref("other", present.key, present.sha256, present.size)
    reply_queue = await channel.declare_queue(exclusive=True)
    jobs = {"missing": str(uuid.uuid4()), "elsewhere": str(uuid.uuid4())}

    await request(channel, queue, reply_queue, {"a": missing.to_json()}, jobs["missing"])
    await request(
        channel, queue, reply_queue, {"ok": present.to_json(), "b": [elsewhere.to_json()]},
        jobs["elsewhere"],
    )  # fmt: skip
    replies = [await take_one(reply_queue), await take_one(reply_queue)]

    by_job = {reply.correlation_id.split(":")[0]: reply for reply in replies}
    assert set(by_job) == set(jobs.values())
    for name, why in (
        (
            "missing",
            rf"{re.escape(missing.uri)}: not found in file://{re.escape(str(store.root))}$",
        ),
        ("elsewhere", rf"{re.escape(elsewhere.uri)}: no store named 'other' here"),
    ):
        headers = by_job[jobs[name]].headers
        assert headers["x-error-type"] == "PayloadRefError"
        assert re.match(rf"PayloadRefError: {why}", headers["x-error"]), headers["x-error"]
        assert json.loads(by_job[jobs[name]].body)["error"]["type"] == "PayloadRefError"
    # Not requeued: once the worker has stopped, nothing is left on its queue (a request it had
    # not acked would be back there) and no further reply came.
    assert await process.stop() == 0
    step_queue = await channel.declare_queue(queue, durable=True, passive=True)
    assert step_queue.declaration_result.message_count == 0
    again = await channel.declare_queue(reply_queue.name, exclusive=True, passive=True)
    assert again.declaration_result.message_count == 0
