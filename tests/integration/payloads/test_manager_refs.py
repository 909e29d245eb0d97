"""The manager with a payload store (`--payload-store`): large values travel as references, it
reads back only those a rule needs, and a job's values go once it has ended.

The test plays the workers over plain AMQP, storing a large reply itself as a worker library
does (each library's own round trip is tested beside this file)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aio_pika
import orjson
import psycopg

from payload_refs import FileStore, as_ref
from tests.pgdatabase import fresh_database

MEGABYTE = 1_000_000
Answer = Callable[[aio_pika.abc.AbstractIncomingMessage, dict[str, Any]], Awaitable[dict]]


def _journal_bytes(db: Path) -> int:
    """The SQLite journal's size once its write-ahead log is folded in (the log alone grows
    by whole pages, and shrinks only at a checkpoint)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db.stat().st_size


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def _serve(sys_, queue: str, answer: Answer) -> aio_pika.abc.AbstractQueue:
    """Play a worker on `<prefix>.<queue>`: reply to each request with `answer`'s output."""
    declared = await sys_.channel.declare_queue(f"{sys_.prefix}.{queue}", durable=True)

    async def handle(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        output = await answer(message, json.loads(message.body))
        reply = aio_pika.Message(
            orjson.dumps(output), correlation_id=message.correlation_id,
            headers={"x-attempt": message.headers.get("x-attempt", 1)},
        )  # fmt: skip
        await sys_.channel.default_exchange.publish(reply, message.reply_to)
        await message.ack()

    await declared.consume(handle)
    return declared


FAN = """
workflows:
  - name: report
    steps:
      - {name: produce, queue: "{p}.produce"}
      - {name: left, queue: "{p}.left", depends: [produce]}
      - {name: right, queue: "{p}.right", depends: [produce]}
      - {name: fan, task: each, depends: [produce]}
    tasks:
      - name: each
        itemListKey: parts
        steps:
          - {name: part, queue: "{p}.part"}
"""


async def test_a_100_mb_output_reaches_two_dependents_and_100_children_by_reference(
    system, tmp_path
):
    stored = tmp_path / "payloads"
    sys_ = await system(FAN, manager_args=("--payload-store", f"main=file://{stored}"))
    store = FileStore("main", stored)
    sizes: dict[str, int] = {}
    seen: list[tuple[str, Any, Any]] = []

    async def produce(message, body):
        size = sizes[message.correlation_id.split(":")[0]]
        value = b'"' + b"x" * (size - 2) + b'"'
        ref = await store.put(message.correlation_id.split(":")[0], value)
        return {"data": ref.to_json(), "parts": list(range(100))}

    async def dependent(message, body):
        seen.append((message.routing_key, message.headers.get("x-payload-refs"), body["data"]))
        return {f"{message.routing_key.rsplit('.', 1)[1]}_done": True}

    for queue, answer in (
        ("produce", produce), ("left", dependent), ("right", dependent), ("part", dependent)
    ):  # fmt: skip
        await _serve(sys_, queue, answer)

    async def run(size: int) -> Any:
        job_id = str(uuid.uuid4())
        sizes[job_id] = size
        outcome = await sys_.run("report", {}, job_id)
        assert outcome.status == "completed", outcome.body
        return outcome.body

    await run(1_000)  # the same shape once, small: what a first job allocates is not counted
    pid = sys_.manager.process.proc.pid
    rss, journal = _rss_bytes(pid), _journal_bytes(sys_.db)
    seen.clear()
    result = await run(100 * MEGABYTE)

    grown_rss, grown_journal = _rss_bytes(pid) - rss, _journal_bytes(sys_.db) - journal
    assert grown_rss < 20 * MEGABYTE, f"the manager's RSS grew {grown_rss:,} bytes"
    assert grown_journal < 1 * MEGABYTE, f"the journal grew {grown_journal:,} bytes"
    assert len(seen) == 102
    for _, header, data in seen:  # each request carries the reference, and says so
        assert header == 1 and as_ref(data) is not None and data["size"] == 100 * MEGABYTE
    assert result["left_done"] and result["right_done"]


GATE = """
workflows:
  - name: gate
    steps:
      - {name: a, queue: "{p}.a", retries: 1}
      - {name: b, queue: "{p}.b", depends: [a], when: "go"}
"""


async def test_the_manager_stores_large_values_and_reads_back_only_what_a_rule_reads(
    system, tmp_path
):
    stored = tmp_path / "payloads"
    sys_ = await system(GATE, manager_args=("--payload-store", f"main=file://{stored}"))
    store = FileStore("main", stored)
    requests: dict[str, list[tuple[Any, dict]]] = {"a": [], "b": []}
    missing = {"$ref": f"wm://main/x/{'0' * 64}", "sha256": "0" * 64, "size": 4}

    async def a(message, body):
        requests["a"].append((message.headers.get("x-attempt"), body))
        job = message.correlation_id.split(":")[0]
        if len(requests["a"]) == 1:  # `go` is read by `when`: a reference there must resolve
            return {"go": missing}
        return {"go": (await store.put(job, b"true")).to_json(), "big": "y" * 300_000}

    async def b(message, body):
        requests["b"].append((message.headers.get("x-payload-refs"), body))
        return {}

    await _serve(sys_, "a", a)
    await _serve(sys_, "b", b)
    job_id = str(uuid.uuid4())
    outcome = await sys_.run("gate", {"blob": "x" * 300_000, "go": "payload"}, job_id)

    assert outcome.status == "completed", outcome.body
    (first, input_a), (second, _) = requests["a"]
    assert (first, second) == (1, 2)  # the attempt with an unreadable reference was retried
    blob = as_ref(input_a["blob"])  # stored by the manager: the trigger was over 256 KiB
    assert blob is not None and input_a["go"] == "payload"
    assert orjson.loads(await store.get(blob)) == "x" * 300_000
    [(header, input_b)] = requests["b"]
    assert input_b["go"] is True  # read back in for `when`
    assert header == 1 and as_ref(input_b["big"]) is not None
    page = (await sys_.http.get(f"/api/job/{job_id}/steps")).json()
    assert "PayloadRefError: wm://main/x/" in json.dumps(page), page
    metrics = (await sys_.http.get("/metrics")).text
    for line in (
        "workflow_manager_payload_values_stored_total 2.0",  # the trigger's blob, a's big
        "workflow_manager_payload_refs_read_total 1.0",  # a's go
        "workflow_manager_payload_ref_failures_total 1.0",  # a's first reply
    ):
        assert f"\n{line}\n" in metrics, line


async def test_a_jobs_values_go_once_it_has_ended_past_the_retention(system, tmp_path):
    stored = tmp_path / "payloads"
    sys_ = await system(
        GATE,
        manager_args=("--payload-store", f"main=file://{stored}", "--payload-retention", "0"),
    )

    async def answer(message, body):
        return {"go": False}

    await _serve(sys_, "a", answer)
    job_id = str(uuid.uuid4())
    outcome = await sys_.run("gate", {"blob": "x" * 300_000}, job_id)
    assert outcome.status == "completed", outcome.body
    end = time.monotonic() + 20
    while (stored / job_id).exists():  # swept within a second or two of the job's end
        assert time.monotonic() < end, "the ended job's values were never removed"
        await asyncio.sleep(0.1)  # polling the store with a deadline
    assert stored.is_dir()


async def test_a_postgresql_store_beside_the_journal_holds_the_values_until_retention(system):
    with fresh_database() as url:
        sys_ = await system(
            GATE,
            db=url,
            manager_args=("--payload-store", f"main={url}", "--payload-retention", "0"),
        )
        inputs: list[dict] = []
        sizes: list[int] = []

        async def answer(message, body):
            inputs.append(body)
            key = body["blob"]["$ref"].split("/", 3)[3]
            with psycopg.connect(url) as conn:  # the value is there while its job runs
                row = conn.execute("SELECT size FROM wm_payloads WHERE key = %s", (key,))
                sizes.extend(size for (size,) in row.fetchall())
            return {"go": False}

        await _serve(sys_, "a", answer)
        job_id = str(uuid.uuid4())
        outcome = await sys_.run("gate", {"blob": "x" * 300_000}, job_id)
        assert outcome.status == "completed", outcome.body
        ref = as_ref(inputs[0]["blob"])
        assert ref is not None and ref.key.startswith(f"{job_id}/")
        assert sizes == [300_002]
        end = time.monotonic() + 20
        with psycopg.connect(url, autocommit=True) as conn:
            while conn.execute(
                "SELECT count(*) FROM wm_payloads WHERE job_id = %s", (job_id,)
            ).fetchone()[0]:
                assert time.monotonic() < end, "the ended job's values were never removed"
                await asyncio.sleep(0.1)  # polling the table with a deadline
