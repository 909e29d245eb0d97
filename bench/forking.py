"""The fork scenario (issue 28): a finished job whose task step fanned out N children, 10 of
them failed, forked from that step: how soon the fork answers, how soon its 10 child requests
reach the worker, and that it sends no others.

The source job runs a workflow of its own (`split` on the session's workers, then a task step
whose child step `work` the bench process serves itself): the bench is the worker of the child
queue, so it sees each child request arrive. It fails the children of `FAILING` elements in
the source job; the task allows that many failed children (`max_failed_items`), so the source
completes with `failed_items`. The fork (`{"from": "fan"}`, children "failed" by default)
keeps the source's completed children and runs the failed ones again; the bench answers them.

There is no baseline: the driver has no journal to fork from, so the figures are absolute.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aio_pika
import httpx
from aio_pika.abc import AbstractIncomingMessage

from bench.managed import ManagerDriver
from bench.procs import BenchError, Child, start_manager
from bench.report import Figure, Target
from bench.session import Session
from bench.shapes import JobSpec
from workflow_manager.transport import manager_queues

__all__ = ["FORK_TARGET_S", "WORKFLOW", "failing", "fork"]

FORK_TARGET_S = 1.0  # issue 28: the fork's child requests all sent within 1 s of the POST
FAILED_CHILDREN = 10
_POLL_S = 0.02  # how often the fork's status is read until it completes

# `{s}`: the session's prefix (its workers serve `split`); `{p}`: this scenario's queues.
WORKFLOW = """\
workflows:
  - name: forkbench
    steps:
      - {name: split, queue: "{s}split"}
      - {name: fan, task: each, depends: [split]}
    tasks:
      - name: each
        itemListKey: items
        max_failed_items: {failed}
        steps:
          - {name: work, queue: "{p}work"}
"""


def failing(children: int) -> frozenset[int]:
    """The elements whose children fail in the source job: 10, spread over the list."""
    step = children // FAILED_CHILDREN
    return frozenset(range(step // 2, children, step))


@dataclass
class ChildWorker:
    """The child step's worker, in the bench process: fails the `failing` elements' requests
    (the source job) and answers the others with their element; records when each request
    arrives once `recording` is set (the fork)."""

    channel: aio_pika.abc.AbstractChannel
    failing: frozenset[int]
    recording: bool = False
    arrivals: list[tuple[float, str, int]] = field(default_factory=list)  # (time, corr. id, item)
    answered: list[float] = field(default_factory=list)
    enough: asyncio.Event = field(default_factory=asyncio.Event)
    wanted: int = FAILED_CHILDREN

    async def on_request(self, message: AbstractIncomingMessage) -> None:
        """Answer one child request (`{"item": i}`): `{"item": i}`, or an x-error."""
        arrived = time.perf_counter()
        item = json.loads(message.body)["item"]
        correlation = message.correlation_id or ""
        if self.recording:
            self.arrivals.append((arrived, correlation, item))
        if item in self.failing:
            reply = aio_pika.Message(
                b"", correlation_id=correlation, headers={"x-error": f"element {item} fails"}
            )
        else:
            reply = aio_pika.Message(
                json.dumps({"item": item}).encode(),
                content_type="application/json",
                correlation_id=correlation,
            )
        await self.channel.default_exchange.publish(reply, message.reply_to or "")
        await message.ack()
        if self.recording:
            self.answered.append(time.perf_counter())
            if len(self.answered) >= self.wanted:
                self.enough.set()


@dataclass(frozen=True)
class Forked:
    """One fork measured: seconds from the POST, and the child requests it sent."""

    children: int
    source_s: float
    answer_s: float  # POST until its 201
    tenth_arrived_s: float  # POST until the 10th child request reached the worker
    tenth_answered_s: float  # ... and until the worker had answered it
    completed_s: float  # POST until GET /api/job/{fork} said completed (polled)
    requests: int  # child requests that arrived for the fork


@contextlib.asynccontextmanager
async def _manager(session: Session, prefix: str) -> AsyncIterator[tuple[Child, ManagerDriver]]:
    """A fresh manager on this scenario's workflow and a fresh journal, with its driver."""
    assert session.connection is not None
    config = session.tmp / "fork.yaml"
    failed = str(FAILED_CHILDREN)
    config.write_text(WORKFLOW.replace("{s}", session.prefix).replace("{p}", prefix)
                      .replace("{failed}", failed))  # fmt: skip
    queue = f"{prefix}wm"
    outcomes = f"{queue}.outcomes"
    session.owns(*manager_queues(queue), outcomes, f"{prefix}work")
    db = session.journals.new("fork")
    pin = session.pinner.manager if session.pinner else None
    process = await start_manager(config, db, queue, session.options.amqp_url, None, pin)
    try:
        driver = await ManagerDriver.open(session.connection, f"{queue}.jobs", outcomes)
        try:
            yield process, driver
        finally:
            await driver.close()
    finally:
        code = await process.stop()
    if code != 0:
        raise BenchError(f"the fork scenario's manager exited with {code}:\n{process.output}")


async def _source(
    driver: ManagerDriver, children: int, bad: frozenset[int], timeout_s: float
) -> str:
    """Run the source job to its end: completed, with exactly the `bad` elements failed."""
    spec = JobSpec("forkbench", str(uuid.uuid4()), {"n": children}, {})
    try:
        result = await asyncio.wait_for(driver.run(spec), timeout_s)
    except TimeoutError:
        raise BenchError(f"fork: the source job of {children:,} children did not end in "
                         f"{timeout_s:.0f}s") from None  # fmt: skip
    failed = sorted(entry["index"] for entry in result.get("failed_items", []))
    expected = [None if i in bad else i for i in range(children)]
    if failed != sorted(bad) or result.get("items") != expected:
        raise BenchError(f"fork: the source job ended with failed_items at {failed}, expected "
                         f"{sorted(bad)} (and every other element's result)")  # fmt: skip
    return spec.job_id


async def _until_completed(http: httpx.AsyncClient, job_id: str, timeout_s: float) -> Any:
    """GET /api/job/{id} until the job has ended; its body (BenchError unless completed)."""
    deadline = time.perf_counter() + timeout_s
    while True:
        body = (await http.get(f"/api/job/{job_id}")).json()
        status = body.get("status")
        if status == "completed":
            return body
        if status in ("failed", "cancelled"):
            raise BenchError(f"fork: the fork {job_id} {status}: {body.get('error')}")
        if time.perf_counter() > deadline:
            raise BenchError(f"fork: the fork {job_id} did not complete in {timeout_s:.0f}s")
        await asyncio.sleep(_POLL_S)  # polling the API, as a client would


async def _check_requests(
    http: httpx.AsyncClient, arrivals: list[tuple[float, str, int]], bad: frozenset[int], fork: str
) -> None:
    """Every child request the fork sent was for a child of the fork, and every failed element
    had one (how many there were is the figure: a duplicate is counted, not an error here)."""
    items = sorted({item for _, _, item in arrivals})
    if items != sorted(bad):
        raise BenchError(f"fork: child requests for elements {items}, expected only the "
                         f"failed ones {sorted(bad)}")  # fmt: skip
    for _, correlation, item in arrivals:
        child = correlation.split(":", 1)[0]
        body = (await http.get(f"/api/job/{child}")).json()
        if body.get("parent") != fork:
            raise BenchError(f"fork: request {correlation} (element {item}) is not for a child "
                             f"of the fork {fork}: {body}")  # fmt: skip


async def _measure(session: Session, children: int, timeout_s: float) -> Forked:
    assert session.connection is not None
    prefix = f"{session.prefix}fork."
    bad = failing(children)
    channel = await session.connection.channel()
    await channel.set_qos(prefetch_count=256)
    worker = ChildWorker(channel, bad)
    try:
        # Declared as the manager declares it, before the manager, so no request waits.
        queue = await channel.declare_queue(f"{prefix}work", durable=True)
        await queue.consume(worker.on_request)
        async with _manager(session, prefix) as (process, driver):
            started = time.perf_counter()
            source = await _source(driver, children, bad, timeout_s)
            source_s = time.perf_counter() - started
            worker.failing, worker.recording = frozenset(), True
            async with httpx.AsyncClient(base_url=process.api_url, timeout=30) as http:
                posted = time.perf_counter()
                response = await http.post(f"/api/job/{source}/fork", json={"from": "fan"})
                answer_s = time.perf_counter() - posted
                if response.status_code != 201:
                    raise BenchError(f"fork: POST /api/job/{source}/fork answered "
                                     f"{response.status_code}: {response.text}")  # fmt: skip
                fork = response.json()["id"]
                try:
                    await asyncio.wait_for(worker.enough.wait(), timeout_s)
                except TimeoutError:
                    raise BenchError(f"fork: {len(worker.arrivals)} of {FAILED_CHILDREN} child "
                                     f"requests in {timeout_s:.0f}s") from None  # fmt: skip
                result = await _until_completed(http, fork, timeout_s)
                completed_s = time.perf_counter() - posted
                if result.get("result", {}).get("items") != list(range(children)):
                    raise BenchError(f"fork: the fork {fork} completed without every element's "
                                     "result in element order")  # fmt: skip
                await _check_requests(http, worker.arrivals, bad, fork)
        tenth = sorted(arrived for arrived, _, _ in worker.arrivals)[FAILED_CHILDREN - 1]
        return Forked(
            children, source_s, answer_s, tenth - posted,
            sorted(worker.answered)[FAILED_CHILDREN - 1] - posted, completed_s,
            len(worker.arrivals),
        )  # fmt: skip
    finally:
        await channel.close()


async def fork(session: Session, children: int, timeout_s: float) -> list[Figure]:
    """A job of `children` children, 10 failed, forked from its task step: the POST's answer,
    the time until the fork's 10th child request reached the worker (<= 1 s), and how many
    child requests the fork sent (exactly 10)."""
    forked = await _measure(session, children, max(timeout_s, children / 100))
    label = f"fork, {children:,} children"
    ms = 1000.0
    source = f"{FAILED_CHILDREN} failed; the source job ran in {forked.source_s:.1f} s; no baseline"
    return [
        Figure(f"{label}: POST until 201", forked.answer_s * ms, "ms", note=source),
        Figure(f"{label}: 10th child request", forked.tenth_arrived_s * ms, "ms",
               target=Target(f"<= {FORK_TARGET_S:g} s", forked.tenth_arrived_s <= FORK_TARGET_S),
               note=f"from the POST; answered by {forked.tenth_answered_s * ms:.0f} ms; "
               f"fork completed by {forked.completed_s * ms:.0f} ms "
               f"(polled each {_POLL_S * ms:.0f} ms)"),
        Figure(f"{label}: child requests sent", forked.requests, "requests",
               target=Target(f"== {FAILED_CHILDREN}", forked.requests == FAILED_CHILDREN)),
    ]  # fmt: skip
