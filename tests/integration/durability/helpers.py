"""Shared pieces of the durability tests: the workflow, expected results, outcome collection,
reading the journal (a SQLite file or a PostgreSQL database), and running a command with its
stderr kept apart."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import psycopg
from aio_pika.abc import AbstractIncomingMessage

from workflow_manager.journal import is_postgres_url

from ..harness import ROOT, Process

READY_TIMEOUT_S = 30.0

WORKER_TARGET = "tests/integration/durability/chaosworkers.py:worker"
# Every queue chaosworkers.py consumes (before the test's prefix).
WORKER_STEPS = ("split", "double", "sum", "title", "slow")

# The word-counts shape: split -> task over the list -> sum, plus an independent title step.
WORKFLOW = """
workflows:
  - name: chaos-counts
    steps:
      - {name: split, queue: "{p}.split"}
      - {name: doubled, task: doubling, depends: [split]}
      - {name: sum, depends: [doubled], queue: "{p}.sum"}
      - {name: title, queue: "{p}.title"}
    tasks:
      - name: doubling
        itemListKey: items
        steps:
          - {name: double, queue: "{p}.double"}
  - name: slow-one
    steps:
      - {name: slow, queue: "{p}.slow"}
"""
CHILDREN_PER_JOB = 10


def expected_result(n: int) -> dict[str, Any]:
    """What a `chaos-counts` job with payload `{"n": n}` must end with."""
    return {"total": sum(2 * (n * 10 + i) for i in range(CHILDREN_PER_JOB)), "title": f"job {n}"}


@dataclass(frozen=True)
class Outcome:
    """One outcome message as received."""

    correlation_id: str | None
    status: str
    body: Any


@dataclass
class Outcomes:
    """Collects the outcome messages of a queue, by job id, and lets a test await a count."""

    queue_name: str
    by_id: dict[str | None, list[Outcome]] = field(default_factory=dict)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def on_message(self, message: AbstractIncomingMessage) -> None:
        status = (message.headers or {}).get("x-status")
        if isinstance(status, bytes):
            status = status.decode()
        try:
            body = json.loads(message.body)
        except ValueError:
            body = message.body
        outcome = Outcome(message.correlation_id, str(status), body)
        async with self._changed:
            self.by_id.setdefault(message.correlation_id, []).append(outcome)
            self._changed.notify_all()
        await message.ack()

    @property
    def distinct(self) -> int:
        """How many different job ids have an outcome."""
        return len(self.by_id)

    async def wait_for(self, count: int, timeout_s: float) -> None:
        """Until `count` different jobs have an outcome; fails with a summary if not in time."""

        async def reached() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.distinct >= count)

        try:
            await asyncio.wait_for(reached(), timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"only {self.distinct} of {count} jobs have an outcome after {timeout_s}s"
            ) from None


async def start_chaos_worker(name: str, amqp_url: str, prefix: str, prefetch: int) -> Process:
    """A chaos worker process on the queues `prefix`.*, once it consumes."""
    worker = await Process.start(
        name,
        sys.executable, "-m", "pyworker", WORKER_TARGET, "--amqp-url", amqp_url,
        "--queue-prefix", f"{prefix}.", "--prefetch", str(prefetch),
    )  # fmt: skip
    await worker.wait_for_line(r"worker consuming", READY_TIMEOUT_S)
    return worker


async def consume_outcomes(channel: Any, name: str) -> Outcomes:
    """A durable queue `name` for outcomes (it survives the broker's restart), being consumed."""
    queue = await channel.declare_queue(name, durable=True)
    outcomes = Outcomes(name)
    await queue.consume(outcomes.on_message)
    return outcomes


async def publish_trigger(
    channel: Any, queue: str, workflow: str, payload: Any, job_id: str | None, reply_to: str | None
) -> None:
    """Publish a trigger to `queue` (confirmed by the broker) as any AMQP client would."""
    message = aio_pika.Message(
        json.dumps(payload).encode(),
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        correlation_id=job_id,
        reply_to=reply_to,
        headers={"workflow": workflow},
    )
    await channel.default_exchange.publish(message, queue)


async def kill_and_delete(rig: Any, processes: list[Any]) -> None:
    """SIGKILL `processes`, then delete the rig's queues (a failed delete reopens its channel)."""
    for process in processes:
        await process.stop(signal.SIGKILL)
    for name in sorted(rig.queues):
        try:
            await rig.channel.queue_delete(name)
        except aio_pika.exceptions.AMQPError:
            rig.channel = await rig.connection.channel()  # a failed delete closes it


def check_outcomes(outcomes: Outcomes, payloads: dict[str, int]) -> None:
    """Every job has a completed outcome with its exact result, copies agree, no stranger ids."""
    strangers = set(outcomes.by_id) - set(payloads)
    assert not strangers, f"outcomes for job ids never triggered: {sorted(map(str, strangers))}"
    missing = set(payloads) - set(outcomes.by_id)
    assert not missing, f"{len(missing)} jobs have no outcome, e.g. {sorted(missing)[:3]}"
    for job_id, n in payloads.items():
        copies = outcomes.by_id[job_id]
        first = copies[0]
        assert first.status == "completed", f"job {job_id} (n={n}): {first}"
        assert first.body == expected_result(n), f"job {job_id} (n={n}): {first.body}"
        differing = [c for c in copies if (c.status, c.body) != (first.status, first.body)]
        assert not differing, f"job {job_id}: duplicate outcomes disagree: {copies}"


def query_journal(db: Path | str, sql: str) -> list[tuple[Any, ...]]:
    """The rows of `sql` on the journal `db` (a SQLite file, opened read-only, or a URL)."""
    if is_postgres_url(db):
        with psycopg.connect(str(db)) as conn:
            return [tuple(row) for row in conn.execute(sql).fetchall()]
    uri = Path(db).resolve().as_uri() + "?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        return conn.execute(sql).fetchall()


def read_jobs(db: Path | str) -> list[tuple[str, str | None, str]]:
    """(id, parent_id, status) of every row of the journal's `jobs` table, read-only."""
    return query_journal(db, "SELECT id, parent_id, status FROM jobs")


def manager_log(process: Any) -> str:
    """A manager's output for failure messages: without aiosqlite's debug and per-job lines."""
    noise = (" DEBUG aiosqlite", "job started job=", "job completed job=")
    return "\n".join(line for line in process.lines if not any(n in line for n in noise))


def unsent(db: Path | str) -> list[str]:
    """Message ids of outbound rows the journal holds as not yet confirmed by the broker."""
    rows = query_journal(
        db, "SELECT msg_id FROM events WHERE msg_id IS NOT NULL AND sent_at IS NULL ORDER BY seq"
    )
    return [msg_id for (msg_id,) in rows]


@dataclass
class Finished:
    """A command that ran to its end."""

    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


@dataclass
class Child:
    """A child process whose stdout and stderr are collected apart, line by line."""

    proc: asyncio.subprocess.Process
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _readers: list[asyncio.Task[None]] = field(default_factory=list)
    _started_s: float = 0.0

    @classmethod
    async def start(cls, *args: str) -> Child:
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        child = cls(proc, _started_s=asyncio.get_running_loop().time())
        child._readers = [
            asyncio.create_task(child._read(proc.stdout, child.out)),
            asyncio.create_task(child._read(proc.stderr, child.err)),
        ]
        return child

    async def _read(self, stream: asyncio.StreamReader | None, lines: list[str]) -> None:
        assert stream is not None
        async for raw in stream:
            async with self._changed:
                lines.append(raw.decode(errors="replace").rstrip())
                self._changed.notify_all()

    async def wait_for_stderr(self, pattern: str, timeout_s: float) -> None:
        regex = re.compile(pattern)

        async def seen() -> None:
            async with self._changed:
                await self._changed.wait_for(
                    lambda: (
                        any(regex.search(line) for line in self.err)
                        or all(task.done() for task in self._readers)
                    )
                )

        try:
            await asyncio.wait_for(seen(), timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"no {pattern!r} on stderr in {timeout_s}s:\n{self.stderr}"
            ) from None
        if not any(regex.search(line) for line in self.err):
            raise AssertionError(f"exited before {pattern!r}; stderr:\n{self.stderr}")

    async def wait(self, timeout_s: float) -> Finished:
        """Wait for the exit (killing the process after `timeout_s`, which fails the test)."""
        try:
            await asyncio.wait_for(self.proc.wait(), timeout_s)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            await asyncio.gather(*self._readers)
            raise AssertionError(
                f"still running after {timeout_s}s (killed); stderr:\n{self.stderr}"
            ) from None
        await asyncio.gather(*self._readers)
        elapsed_s = asyncio.get_running_loop().time() - self._started_s
        assert self.proc.returncode is not None
        return Finished(self.proc.returncode, "\n".join(self.out), self.stderr, elapsed_s)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        await asyncio.gather(*self._readers)

    @property
    def stderr(self) -> str:
        return "\n".join(self.err)


async def rabbitmqctl(*args: str, timeout_s: float = 120) -> str:
    """Run `rabbitmqctl ARGS`; fails the test with its output when it fails."""
    proc = await asyncio.create_subprocess_exec(
        "rabbitmqctl", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"rabbitmqctl {' '.join(args)}: no answer in {timeout_s}s") from None
    text = out.decode(errors="replace")
    assert proc.returncode == 0, f"rabbitmqctl {' '.join(args)} failed:\n{text}"
    return text


async def broker_connection_of(pid: int) -> str:
    """RabbitMQ's id (for `rabbitmqctl close_connection`) of the one connection of process `pid`."""
    sockets = await _output("ss", "-tnpH", "state", "established", "dport", "= :5672")
    ports = {
        match.group(1)
        for line in sockets.splitlines()
        if f"pid={pid}," in line and (match := re.search(r":(\d+)\s+\S+:5672\b", line))
    }
    assert len(ports) == 1, f"process {pid} has {len(ports)} broker connections:\n{sockets}"
    listing = await rabbitmqctl("-q", "--no-table-headers", "list_connections", "pid", "peer_port")
    ids = [line.split("\t")[0] for line in listing.splitlines() if line.split("\t")[1:] == [*ports]]
    assert len(ids) == 1, f"no broker connection from port {ports}:\n{listing}"
    return ids[0]


async def _output(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, f"{args}: {out.decode(errors='replace')}"
    return out.decode(errors="replace")


@contextmanager
def write_lock(db: Path | str) -> Iterator[None]:
    """Hold the journal's write lock: the manager's commits wait (SQLite's busy timeout is 5 s;
    PostgreSQL's commits wait for the lock on `events` as long as it is held)."""
    if is_postgres_url(db):
        with psycopg.connect(str(db)) as conn, conn.transaction():
            conn.execute("LOCK TABLE events IN EXCLUSIVE MODE")
            yield
        return
    with closing(sqlite3.connect(db, timeout=5, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
