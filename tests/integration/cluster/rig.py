"""A rig for several managers on one PostgreSQL journal (`--partitions`): the durability
suite's workflow and chaos workers, managers started, killed and stopped by index."""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection

from ..durability import helpers as chaos
from ..harness import Process, free_port


@dataclass
class Member:
    """One manager process of the rig and its HTTP API."""

    process: Process
    api_url: str

    @property
    def owner(self) -> str:
        """Its name in the lease table (host:pid)."""
        return f"{socket.gethostname()}:{self.process.proc.pid}"


@dataclass
class ClusterRig:
    """Processes and names for one test; queue names all start with `prefix`."""

    prefix: str
    amqp_url: str
    db: str
    config: Path
    connection: AbstractRobustConnection
    channel: AbstractRobustChannel
    partitions: int
    manager_db: str = ""  # the managers' --db, when not `db` (through a proxy)
    managers: list[Member] = field(default_factory=list)
    workers: list[Process] = field(default_factory=list)
    queues: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.config.write_text(chaos.WORKFLOW.replace("{p}", self.prefix))
        self.queues.update({self.queue, f"{self.queue}.jobs", f"{self.queue}.signals"})
        self.queues.update({f"{self.queue}.dead", *self.partition_queues})
        self.queues.update(f"{self.prefix}.{step}" for step in chaos.WORKER_STEPS)

    @property
    def queue(self) -> str:
        return f"{self.prefix}.wm"

    @property
    def partition_queues(self) -> list[str]:
        return [f"{self.queue}.p{k}" for k in range(self.partitions)]

    def serve_args(self, port: int, partitions: int | None) -> list[str]:
        """`python -m workflow_manager serve ...` on the rig's journal and queue."""
        args = [
            sys.executable, "-m", "workflow_manager", "serve", "--config", str(self.config),
            "--queue", self.queue, "--amqp-url", self.amqp_url, "--db", self.manager_db or self.db,
            "--port", str(port),
        ]  # fmt: skip
        return args if partitions is None else [*args, "--partitions", str(partitions)]

    async def start_manager(self) -> Member:
        """Start one more manager and wait until it serves its API."""
        port = free_port()
        process = await Process.start(
            f"manager #{len(self.managers) + 1}", *self.serve_args(port, self.partitions)
        )
        await process.wait_for_line(r"HTTP API on", chaos.READY_TIMEOUT_S)
        member = Member(process, f"http://127.0.0.1:{port}")
        self.managers.append(member)
        return member

    async def start_worker(self, prefetch: int = 50) -> Process:
        """Start a chaos worker process on this rig's queues and wait until it consumes."""
        name = f"worker #{len(self.workers) + 1}"
        worker = await chaos.start_chaos_worker(name, self.amqp_url, self.prefix, prefetch)
        self.workers.append(worker)
        return worker

    async def outcome_queue(self) -> chaos.Outcomes:
        """A durable queue for outcomes (it survives the broker's restart), being consumed."""
        name = f"{self.prefix}.outcomes"
        self.queues.add(name)
        return await chaos.consume_outcomes(self.channel, name)

    async def trigger(self, payload: Any, job_id: str | None, reply_to: str) -> None:
        """Publish a chaos-counts trigger to `<queue>.jobs` (confirmed by the broker)."""
        queue = f"{self.queue}.jobs"
        await chaos.publish_trigger(self.channel, queue, "chaos-counts", payload, job_id, reply_to)

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Rows of `sql` on the rig's database (autocommit)."""
        with psycopg.connect(self.db, autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    def shares(self) -> dict[str, int]:
        """Live leases per owner, from the lease table."""
        rows = self.query(
            "SELECT owner, count(*) FROM partition_leases WHERE owner IS NOT NULL"
            " AND expires_at > extract(epoch FROM clock_timestamp()) GROUP BY owner"
        )
        return {owner: int(count) for owner, count in rows}

    def commits(self) -> dict[int, list[tuple[int, str, int]]]:
        """partition -> (epoch, owner, commits) at each epoch it was committed for, in epoch
        order, after checking the journal's ledger: no commit came at an older epoch after
        one at a newer (each epoch's last commit precedes the next epoch's first)."""
        rows = self.query(
            "SELECT partition, epoch, owner, first_at, last_at, commits FROM partition_commits"
            " ORDER BY partition, epoch"
        )
        ledger: dict[int, list[tuple[int, str, int]]] = {}
        last: dict[int, tuple[int, float]] = {}
        for partition, epoch, owner, first_at, last_at, count in rows:
            if partition in last:
                before, before_last = last[partition]
                assert before_last <= first_at, (
                    f"partition {partition}: a commit at epoch {before} ({before_last}) after "
                    f"the first at epoch {epoch} ({first_at}): {rows}"
                )
            last[partition] = (epoch, last_at)
            ledger.setdefault(partition, []).append((int(epoch), owner, int(count)))
        return ledger

    async def balanced(self, managers: list[Member], timeout_s: float = 10.0) -> dict[str, int]:
        """Wait until `managers` run every partition between them, each ⌊P/M⌋ or ⌈P/M⌉ of
        them (fails after `timeout_s`); their shares by name."""
        low, high = self.partitions // len(managers), -(-self.partitions // len(managers))
        names = {member.owner for member in managers}

        def even() -> bool:
            shares = self.shares()
            return (
                set(shares) == names
                and sum(shares.values()) == self.partitions
                and all(low <= n <= high for n in shares.values())
            )

        await until(even, f"{self.partitions} partitions balanced over {names}", timeout_s)
        return self.shares()

    async def cleanup(self) -> None:
        await chaos.kill_and_delete(self, [*self.workers, *(m.process for m in self.managers)])


async def start_key_worker(cluster: ClusterRig) -> Process:
    """The worker of keyworkers.py on the cluster's queues, its record of requests kept."""
    worker = await Process.start(
        "key worker",
        sys.executable, "-m", "pyworker", "tests/integration/cluster/keyworkers.py:worker",
        "--amqp-url", cluster.amqp_url, "--queue-prefix", f"{cluster.prefix}.",
        "--prefetch", "50",
    )  # fmt: skip
    await worker.wait_for_line(r"worker consuming", chaos.READY_TIMEOUT_S)
    cluster.workers.append(worker)
    return worker


async def rejoins(member: Member) -> dict[str, float]:
    """cause -> how often `member` rejoined as a standby, from its /metrics."""
    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(f"{member.api_url}/metrics")).text
    found = re.findall(r'^workflow_manager_rejoins_total\{cause="(\w+)"\} (\S+)$', text, re.M)
    return {cause: float(count) for cause, count in found}


async def until(predicate: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Poll `predicate` (a database read) until true; fails naming `what` after `timeout_s`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {timeout_s}s: {what}")
        await asyncio.sleep(0.1)


async def each_job_made_once(cluster: ClusterRig, roots: int, children: int) -> None:
    """Once committed (an outcome may go out while its commit is in flight): `roots` completed
    top-level jobs, each with exactly `children` child jobs, so none was created twice; and no
    commit at an old epoch in the journal's ledger (`ClusterRig.commits`)."""
    sql = (
        "SELECT count(*) FILTER (WHERE parent_id IS NULL AND status = 'completed'),"
        " count(*) FILTER (WHERE parent_id IS NOT NULL) FROM jobs"
    )
    await until(lambda: cluster.query(sql)[0][0] >= roots, f"{roots} jobs completed")
    await until(lambda: cluster.query(sql)[0][1] >= roots * children, "every child job written")
    counts = cluster.query(
        "SELECT root_id, count(*) FROM jobs WHERE parent_id IS NOT NULL GROUP BY 1"
        " HAVING count(*) <> %s",
        (children,),
    )
    assert cluster.query(sql) == [(roots, roots * children)]
    assert not counts, f"jobs with another number of children: {counts[:5]}"
    assert cluster.commits(), "no commit in the ledger"


def ids_in_partition(partition: int, count: int, how_many: int) -> list[str]:
    """Job ids whose partition (of `count`) is `partition`, as the manager computes it."""
    from workflow_manager.cluster.partitioning import Partitioning

    split = Partitioning("any", count)
    found: list[str] = []
    while len(found) < how_many:
        job_id = str(uuid.uuid4())
        if split.of(job_id) == partition:
            found.append(job_id)
    return found


def comparable(value: Any) -> Any:
    """A job's answer without what depends on when it was asked (elapsed seconds, anywhere)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if "elapsed" not in k}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value
