"""The bulk scenario (issue 28): N running jobs cancelled with one `POST /api/jobs/bulk`: how
soon it answers, how soon `GET /api/bulk/{id}` says finished (<= 10 s for 100,000 jobs), and
that exactly the matched jobs were cancelled.

A fresh manager (own queue, fresh journal) serves two one-step workflows whose step queues
nobody consumes, so each job stays running with its one request in flight: `bulkkeep`
(1,000 jobs, which must stay running) and `bulkbench` (the N jobs cancelled by the filter
`{"workflow": "bulkbench"}`). The bench starts them with triggers on `<queue>.jobs`, as fast
as it can publish them, and waits until every request is in its step queue and
`GET /api/workflows` counts every job running.

There is no baseline: the driver has no jobs to act on in bulk, so the figures are absolute.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aio_pika
import httpx

from bench.procs import BenchError, Child, cpu_s, memory_kb, reset_peak, start_manager
from bench.report import Figure, Target
from bench.session import Session
from workflow_manager.transport import manager_queues

__all__ = ["BULK_TARGET_S", "KEPT_JOBS", "WORKFLOW", "bulk"]

BULK_TARGET_S = 10.0  # issue 28: 100,000 running jobs cancelled within 10 s of the POST
KEPT_JOBS = 1000  # running jobs of another workflow, which the bulk must leave running
CANCELLED, KEPT = "bulkbench", "bulkkeep"
_POLL_S = 0.05  # how often the bulk's status is read until it finishes
_WAIT_POLL_S = 0.5  # how often the step queues are read while the jobs start
_PUBLISH_BATCH = 500  # triggers awaiting their confirms at once
_MB = 1e6

# `{p}`: this scenario's queues. Nobody consumes `idle` or `kept`.
WORKFLOW = """\
workflows:
  - name: bulkbench
    steps:
      - {name: wait, queue: "{p}idle"}
  - name: bulkkeep
    steps:
      - {name: wait, queue: "{p}kept"}
"""


@dataclass(frozen=True)
class Bulked:
    """One bulk cancel measured: seconds from the POST, and what the manager said after."""

    jobs: int
    started_s: float  # from the first trigger until every job ran with its request in flight
    answer_s: float  # POST until its 202
    finished_s: float  # POST until GET /api/bulk/{id} said finished (polled)
    matched: int
    status: dict[str, Any]  # GET /api/bulk/{id}, finished
    running: dict[str, int]  # GET /api/workflows after: running jobs by workflow
    running_ids: int  # GET /api/jobs after: every running job, child jobs included
    manager_cpu_s: float  # the manager's CPU from the POST until finished
    loaded_kb: int  # the manager's RSS before the POST, every job running
    peak_kb: int  # its peak RSS from the POST until finished (its life's, if not `reset`)
    reset: bool  # whether the peak was reset before the POST


@contextlib.asynccontextmanager
async def _manager(session: Session, prefix: str) -> AsyncIterator[tuple[Child, str]]:
    """A fresh manager on this scenario's workflows and a fresh journal; its trigger queue."""
    config = session.tmp / "bulk.yaml"
    config.write_text(WORKFLOW.replace("{p}", prefix))
    queue = f"{prefix}wm"
    session.owns(*manager_queues(queue))
    db = session.journals.new("bulk")
    pin = session.pinner.manager if session.pinner else None
    process = await start_manager(config, db, queue, session.options.amqp_url, None, pin)
    try:
        yield process, f"{queue}.jobs"
    finally:
        code = await process.stop()
    if code != 0:
        raise BenchError(f"the bulk scenario's manager exited with {code}:\n{process.output}")


async def _trigger(
    channel: aio_pika.abc.AbstractChannel, queue: str, workflow: str, n: int
) -> None:
    """Start `n` jobs of `workflow` (empty payload; no reply_to: nobody waits for an outcome)."""
    for first in range(0, n, _PUBLISH_BATCH):
        await asyncio.gather(*(
            channel.default_exchange.publish(
                aio_pika.Message(
                    b"{}",
                    content_type="application/json",
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    headers={"workflow": workflow},
                ),
                queue,
            )
            for _ in range(min(_PUBLISH_BATCH, n - first))
        ))  # fmt: skip


async def _running(http: httpx.AsyncClient) -> dict[str, int]:
    """Running top-level jobs by workflow (`GET /api/workflows`)."""
    listed = (await http.get("/api/workflows")).json()
    return {entry["name"]: entry["job_count"] for entry in listed}


async def _until_in_flight(
    channel: aio_pika.abc.AbstractChannel,
    http: httpx.AsyncClient,
    wanted: dict[str, int],
    jobs: dict[str, int],
    timeout_s: float,
) -> None:
    """Wait until each step queue holds its `wanted` requests and `GET /api/workflows` counts
    the `jobs` running, by workflow."""
    deadline = time.perf_counter() + timeout_s
    while True:
        counts = {}
        for queue in wanted:
            # Declared as the manager declares it, so this never conflicts.
            declared = await channel.declare_queue(queue, durable=True)
            counts[queue] = declared.declaration_result.message_count
        if counts == wanted:
            break
        if time.perf_counter() > deadline:
            raise BenchError(f"bulk: requests in flight {counts} after {timeout_s:.0f}s, "
                             f"expected {wanted}")  # fmt: skip
        await asyncio.sleep(_WAIT_POLL_S)  # the broker's counts, read as a client would
    running = await _running(http)
    if running != jobs:
        raise BenchError(f"bulk: GET /api/workflows counts {running} running, expected {jobs}")


async def _until_finished(http: httpx.AsyncClient, bulk_id: str, timeout_s: float) -> Any:
    """GET /api/bulk/{id} every 50 ms until it says finished; its body."""
    deadline = time.perf_counter() + timeout_s
    while True:
        body = (await http.get(f"/api/bulk/{bulk_id}")).json()
        if body.get("status") == "finished":
            return body
        if time.perf_counter() > deadline:
            raise BenchError(f"bulk: {bulk_id} not finished in {timeout_s:.0f}s: {body}")
        await asyncio.sleep(_POLL_S)  # polling the API, as a client would


async def _measure(session: Session, jobs: int, timeout_s: float) -> Bulked:
    assert session.connection is not None
    prefix = f"{session.prefix}bulk."
    idle, kept = f"{prefix}idle", f"{prefix}kept"
    session.owns(idle, kept)
    channel = await session.connection.channel(publisher_confirms=True)
    try:
        # Declared as the manager declares them, before it starts; nobody consumes them.
        for queue in (idle, kept):
            await channel.declare_queue(queue, durable=True)
        async with _manager(session, prefix) as (process, triggers):
            async with httpx.AsyncClient(base_url=process.api_url, timeout=60) as http:
                started = time.perf_counter()
                await _trigger(channel, triggers, KEPT, KEPT_JOBS)
                await _trigger(channel, triggers, CANCELLED, jobs)
                await _until_in_flight(
                    channel, http, {idle: jobs, kept: KEPT_JOBS},
                    {CANCELLED: jobs, KEPT: KEPT_JOBS}, timeout_s,
                )  # fmt: skip
                started_s = time.perf_counter() - started
                pid = process.pid
                loaded_kb = memory_kb(pid, "VmRSS")
                reset = reset_peak(pid)
                cpu = cpu_s(pid)
                posted = time.perf_counter()
                response = await http.post(
                    "/api/jobs/bulk", json={"action": "cancel", "filter": {"workflow": CANCELLED}}
                )
                answer_s = time.perf_counter() - posted
                if response.status_code != 202:
                    raise BenchError(f"bulk: POST /api/jobs/bulk answered "
                                     f"{response.status_code}: {response.text}")  # fmt: skip
                accepted = response.json()
                status = await _until_finished(http, accepted["id"], timeout_s)
                finished_s = time.perf_counter() - posted
                manager_cpu_s = cpu_s(pid) - cpu
                peak_kb = memory_kb(pid, "VmHWM")
                running = await _running(http)
                running_ids = len((await http.get("/api/jobs")).json()["jobs"])
        return Bulked(
            jobs, started_s, answer_s, finished_s, accepted["matched"], status, running,
            running_ids, manager_cpu_s, loaded_kb, peak_kb, reset,
        )  # fmt: skip
    finally:
        await channel.close()


def _exact(bulked: Bulked) -> tuple[bool, str]:
    """Whether exactly the matched jobs were cancelled, and what the manager said."""
    status, n = bulked.status, bulked.jobs
    passed = (
        bulked.matched == status.get("total") == status.get("changed") == n
        and status.get("refused") == 0
        and bulked.running == {CANCELLED: 0, KEPT: KEPT_JOBS}
        and bulked.running_ids == KEPT_JOBS
    )
    said = (
        f"matched {bulked.matched:,}, total {status.get('total', 0):,}, "
        f"refused {status.get('refused', 0):,}; running after: {bulked.running.get(CANCELLED)} "
        f"{CANCELLED}, {bulked.running.get(KEPT)} {KEPT} ({bulked.running_ids:,} in /api/jobs)"
    )
    return passed, said


async def bulk(session: Session, jobs: int, timeout_s: float) -> list[Figure]:
    """`jobs` running jobs (and 1,000 of another workflow) cancelled with one bulk action: the
    POST's answer, the time until the bulk finished (<= 10 s), the jobs it changed (exactly
    `jobs`, none of the others), and the manager's peak RSS meanwhile."""
    bulked = await _measure(session, jobs, max(timeout_s, jobs / 100))
    label = f"bulk cancel, {jobs:,} running jobs"
    ms = 1000.0
    passed, said = _exact(bulked)
    started = (f"{KEPT_JOBS:,} others running; the jobs started in {bulked.started_s:.1f} s; "
               "no baseline")  # fmt: skip
    since = "the POST" if bulked.reset else "its start (the kernel kept the peak)"
    return [
        Figure(f"{label}: POST until 202", bulked.answer_s * ms, "ms", note=started),
        Figure(f"{label}: until finished", bulked.finished_s, "s",
               target=Target(f"<= {BULK_TARGET_S:g} s", bulked.finished_s <= BULK_TARGET_S),
               note=f"from the POST (GET /api/bulk/{{id}} polled each {_POLL_S * ms:.0f} ms); "
               f"manager CPU {bulked.manager_cpu_s:.1f} s"),
        Figure(f"{label}: jobs cancelled", float(bulked.status.get("changed", 0)), "jobs",
               target=Target(f"== {jobs:,}, others untouched", passed), note=said),
        Figure(f"{label}: manager peak RSS", bulked.peak_kb * 1024 / _MB, "MB",
               note=f"since {since}; {bulked.loaded_kb * 1024 / _MB:.0f} MB before the POST, "
               "every job running"),
    ]  # fmt: skip
