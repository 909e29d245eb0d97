"""Payloads by reference (docs/protocol.md) through every shipped echo worker: pyworker,
jsworker, goworker, the exec worker and the HTTP bridge, each a real process on the real
RabbitMQ with a real file or PostgreSQL store. The test plays the manager: it stores values with
payload_refs, sends requests holding their references and reads the replies' references back.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from payload_refs import REFS_HEADER, FileStore, Ref, as_ref
from payload_refs.pgstore import PostgresStore
from payload_refs.stores import ref_for
from tests.integration.conformance.kinds import GOOD_WORKERS, WorkerKind
from tests.integration.payloads.refrig import (
    LIBRARY,
    RefRig,
    digest_and_size,
    header,
    json_text,
    stored_rows,
)
from tests.pgdatabase import fresh_database

BIG_BYTES = 100 * 1024 * 1024
PG_THRESHOLD = 1024  # low, so a few KB go to the store
EXIT_TIMEOUT_S = 60.0  # the Go kind compiles before it reads its settings

# What each library says of a reference to a store it was not given (`other`; it has `main`).
UNKNOWN_STORE = {
    "python": "no store named 'other' here (configured: main)",
    "javascript": 'no payload store named "other" here (configured: main)',
    "go": 'no store named "other": this worker\'s stores are main (WM_PAYLOAD_STORES)',
}
# What each kind prints, and no stack trace, when WM_PAYLOAD_STORES is `main` (not NAME=URL).
# The HTTP bridge's kind is left out: tests/integration/bridge/echo_bridge.py calls serve_bridge
# itself, so the settings error escapes as a traceback (`workflow-manager bridge` reports it in
# one line).
BAD_STORES_SAYS = {
    "pyworker": "pyworker: error: environment variable WM_PAYLOAD_STORES: 'main' is not NAME=URL",
    "exec": "pyworker exec: error: environment variable WM_PAYLOAD_STORES: 'main' is not NAME=URL",
    "jsworker": 'echo: error: environment variable WM_PAYLOAD_STORES: entry "main" is not NAME=URL',
    "goworker": 'echo: environment variable WM_PAYLOAD_STORES: entry "main": not NAME=URL',
}
STACK_TRACE_MARKS = ("Traceback (most recent call last)", "    at ", "goroutine ", "panic:")


def kinds(slow: frozenset[str] = frozenset(), only: frozenset[str] | None = None) -> list[object]:
    """GOOD_WORKERS as parameters named by kind, those in `slow` marked slow."""
    return [
        pytest.param(kind, id=kind.name, marks=[pytest.mark.slow] if kind.name in slow else [])
        for kind in GOOD_WORKERS
        if only is None or kind.name in only
    ]


@pytest.fixture
async def rig(amqp_url: str, unique: str) -> AsyncIterator[RefRig]:
    """This test's echo workers; stopped (exit 0) and their queues deleted after."""
    async with RefRig(amqp_url, unique) as started:
        yield started


def big_value() -> bytes:
    """Over 100 MiB of JSON text, `{"rows": [{"i": n, "t": <1 KB>}...], "title": "big"}`, as
    every library writes it (compact, keys sorted as Go's maps write them, no character any
    encoder escapes), so a worker's stored reply is the very same bytes. Joined, not dumped:
    ten times faster."""
    text = "".join(chr(ord("a") + i % 26) for i in range(1000))
    count = BIG_BYTES // (len(text) + 20) + 1
    rows = ",".join(f'{{"i":{i},"t":"{i:07d} {text}"}}' for i in range(count))
    return f'{{"rows":[{rows}],"title":"big"}}'.encode()


# The exec kind's echo.sh reads and prints 100 MB through the shell: 11-22 s, the others ~5 s.
@pytest.mark.parametrize("kind", kinds(slow=frozenset({"exec"})))
async def test_a_100_mb_value_goes_to_the_worker_and_back_by_reference(
    kind: WorkerKind, rig: RefRig, tmp_path: Path
) -> None:
    store = FileStore("main", tmp_path / "payloads")
    data = big_value()
    assert len(data) > BIG_BYTES
    # Stored for another job (a parent step's output, say), so the worker's copy is a new key.
    original = await store.put(str(uuid.uuid4()), data)
    worker = await rig.start(kind, f"main=file://{store.root}")
    job = str(uuid.uuid4())

    started = time.monotonic()
    reply = await worker.ask({"data": original.to_json(), "n": 1}, job)
    elapsed = time.monotonic() - started

    assert header(reply, "x-error") is None, header(reply, "x-error")
    assert len(reply.body) < 1024  # the 100 MB stayed out of RabbitMQ
    assert header(reply, REFS_HEADER) == 1
    body = json.loads(reply.body)
    assert body["n"] == 1  # small: inline
    echoed = as_ref(body["data"])
    assert echoed is not None, f"'data' came back inline ({len(reply.body)} bytes)"
    # Stored by the worker, for the request's job: the same bytes under a new key.
    assert echoed == Ref("main", f"{job}/{original.sha256}", original.sha256, original.size)
    assert await digest_and_size(store, echoed) == (original.sha256, len(data))
    left = sorted(path.name for path in (store.root / job).iterdir())
    assert left == [original.sha256], "a temporary file was left beside the value"
    print(f"{kind.name}: 100 MB round trip in {elapsed:.1f}s")


@pytest.mark.parametrize("kind", kinds())
async def test_values_go_through_a_postgresql_store(kind: WorkerKind, rig: RefRig) -> None:
    value = {"words": [f"réponse {i}" for i in range(300)]}  # UTF-8, not \u escapes
    data = json_text(value)
    other_value = {"rows": [f"row {i}" for i in range(400)]}
    other_data = json_text(other_value)
    assert min(len(data), len(other_data)) > PG_THRESHOLD
    first, second, third = (str(uuid.uuid4()) for _ in range(3))
    with fresh_database() as url:
        store = PostgresStore("pg", url)
        try:
            worker = await rig.start(kind, f"pg={url}", threshold=PG_THRESHOLD)

            # An inline value over the threshold: the worker creates the table and stores it.
            reply = await worker.ask({"data": value, "n": 1}, first)
            assert header(reply, "x-error") is None, header(reply, "x-error")
            assert header(reply, REFS_HEADER) == 1
            by_worker = ref_for("pg", first, data)
            assert json.loads(reply.body) == {"data": by_worker.to_json(), "n": 1}
            assert await store.get(by_worker) == data

            # That reference in a request: resolved from PostgreSQL, echoed, stored again.
            reply = await worker.ask({"data": by_worker.to_json(), "n": 2}, second)
            assert header(reply, "x-error") is None, header(reply, "x-error")
            again = ref_for("pg", second, data)
            assert json.loads(reply.body) == {"data": again.to_json(), "n": 2}

            # A value another party (the manager) stored: resolved and stored the same way.
            by_manager = await store.put(str(uuid.uuid4()), other_data)
            reply = await worker.ask({"data": by_manager.to_json(), "n": 3}, third)
            assert header(reply, "x-error") is None, header(reply, "x-error")
            echoed = ref_for("pg", third, other_data)
            assert json.loads(reply.body) == {"data": echoed.to_json(), "n": 3}
            assert await store.get(echoed) == other_data

            assert await worker.stop() == 0  # before the database is dropped under it
            refs = (by_worker, again, by_manager, echoed)
            assert stored_rows(url) == {(r.key, r.job_id, r.sha256, r.size) for r in refs}
        finally:
            await store.close()


@pytest.mark.parametrize("kind", kinds())
async def test_a_reference_that_cannot_be_resolved_gets_a_payload_ref_error(
    kind: WorkerKind, rig: RefRig, tmp_path: Path
) -> None:
    store = FileStore("main", tmp_path / "payloads")
    present = await store.put(str(uuid.uuid4()), b'"here"')
    worker = await rig.start(kind, f"main=file://{store.root}")
    missing_job, elsewhere_job = str(uuid.uuid4()), str(uuid.uuid4())
    missing = ref_for("main", missing_job, b'"never stored"')
    elsewhere = Ref("other", present.key, present.sha256, present.size)
    cases = [
        # Deep in the input, as in a task step's gathered results.
        (missing_job, {"gathered": [{"data": missing.to_json()}], "n": 1},
         f"{missing.uri}: not found in file://{store.root}"),
        # Beside a reference that resolves: the step fails all the same.
        (elsewhere_job, {"ok": present.to_json(), "gathered": [elsewhere.to_json()]},
         f"{elsewhere.uri}: {UNKNOWN_STORE[LIBRARY[kind.name]]}"),
    ]  # fmt: skip

    for job, body, why in cases:
        reply = await worker.ask(body, job)
        assert header(reply, "x-error-type") == "PayloadRefError"
        message = f"PayloadRefError: {why}"
        assert header(reply, "x-error") == message
        assert json.loads(reply.body) == {"error": {"type": "PayloadRefError", "message": message}}

    # Acked, not requeued: after a graceful stop (which would return anything unacked) the
    # queue is empty, and no second reply came.
    assert await worker.stop() == 0, worker.process.output
    assert await worker.waiting(worker.queue) == 0
    assert await worker.waiting(worker.replies.name) == 0
    assert "PayloadRefError" in worker.process.output  # the failure is logged


@pytest.mark.parametrize("kind", kinds(only=frozenset(BAD_STORES_SAYS)))
async def test_a_bad_store_setting_stops_the_worker_at_start(kind: WorkerKind, rig: RefRig) -> None:
    _queue, process = await rig.launch(kind, "main")

    try:
        code = await process.exited(EXIT_TIMEOUT_S)
    except TimeoutError:
        pytest.fail(f"{kind.name} still runs {EXIT_TIMEOUT_S:.0f}s on:\n{process.output}")

    assert code != 0, process.output
    assert BAD_STORES_SAYS[kind.name] in process.output, process.output
    assert not [mark for mark in STACK_TRACE_MARKS if mark in process.output], process.output
