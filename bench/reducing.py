"""The reduce scenario (opt-in: `--only reduce`): N children reduced as they finish, the
manager's memory meanwhile, and how soon the result is ready after the last child.

One workflow: a task step fans the payload's `items` out to children whose step `work`
answers `{"item": x}`, with `reduce: {step: total, batch: 100}`. The bench process is the
worker of both `work` and the reducer `total` (which sums the items and counts them). The
figures: the manager's peak RSS during the run (sampled from /proc every 0.1 s, and its
VmHWM after a reset at the trigger where the kernel allows it), and the time from the last
child's reply being published until the job's outcome arrives (issue: 100,000 children under
100 MB, ready within 1 s). The accumulator is checked: every child counted exactly once.

There is no baseline: the driver has no reduce, so the figures are absolute.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from dataclasses import dataclass, field

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from bench.procs import BenchError, memory_kb, reset_peak
from bench.report import Figure, Target
from bench.session import Session

__all__ = ["REDUCE_RSS_TARGET_MB", "REDUCE_READY_TARGET_S", "reduce_scenario"]

REDUCE_RSS_TARGET_MB = 100.0  # the issue: the manager's RSS under 100 MB
REDUCE_READY_TARGET_S = 1.0  # the issue: the result within 1 s of the last child
BATCH = 100
SAMPLE_S = 0.1  # how often the manager's RSS is read

# `{p}`: this scenario's queues.
WORKFLOW = """\
workflows:
  - name: reducebench
    steps:
      - name: fan
        task: each
        reduce: {step: total, queue: "{p}total", batch: {batch}, initial: {sum: 0, count: 0}}
    tasks:
      - name: each
        itemListKey: items
        max_in_flight: 1000
        steps:
          - {name: work, queue: "{p}work"}
"""


@dataclass
class Worker:
    """The children's step and the reducer, in the bench process: each request answered at
    once; notes when the last child's reply was published."""

    channel: AbstractChannel
    children: int
    answered: int = 0
    last_child_at: float | None = None
    reductions: int = 0

    async def _reply(self, message: AbstractIncomingMessage, body: dict) -> None:
        headers = {}
        if message.headers and "x-attempt" in message.headers:
            headers["x-attempt"] = message.headers["x-attempt"]
        reply = aio_pika.Message(
            json.dumps(body).encode(),
            content_type="application/json",
            correlation_id=message.correlation_id or "",
            headers=headers,
        )
        await self.channel.default_exchange.publish(reply, message.reply_to or "")
        await message.ack()

    async def on_work(self, message: AbstractIncomingMessage) -> None:
        """A child's step: its element back."""
        await self._reply(message, {"item": json.loads(message.body)["item"]})
        self.answered += 1
        if self.answered == self.children:
            self.last_child_at = time.perf_counter()

    async def on_total(self, message: AbstractIncomingMessage) -> None:
        """The reducer: the items summed and counted."""
        request = json.loads(message.body)
        acc, results = request["accumulator"], request["results"]
        total = {
            "sum": acc["sum"] + sum(r["item"] for r in results),
            "count": acc["count"] + len(results),
        }
        self.reductions += 1
        await self._reply(message, total)


@dataclass
class RssSampler:
    """The manager's RSS, read every `SAMPLE_S` until stopped; the largest seen."""

    pid: int
    peak_kb: int = 0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        """Sample until `stop`."""
        while not self._stop.is_set():
            with contextlib.suppress(OSError, BenchError):
                self.peak_kb = max(self.peak_kb, memory_kb(self.pid, "VmRSS"))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), SAMPLE_S)

    def stop(self) -> None:
        """End the sampling."""
        self._stop.set()


@dataclass(frozen=True)
class Measured:
    """One run."""

    children: int
    total_s: float  # trigger until outcome
    ready_s: float  # last child's reply published until outcome
    rss_start_mb: float  # before the trigger
    rss_peak_mb: float  # the largest sampled, or VmHWM since the trigger if larger
    reductions: int


async def _measure(session: Session, children: int, timeout_s: float) -> Measured:
    assert session.connection is not None
    prefix = f"{session.prefix}reduce."
    channel = await session.connection.channel(publisher_confirms=True)
    await channel.set_qos(prefetch_count=200)
    worker = Worker(channel, children)
    try:
        # Declared as the manager declares them, before the manager, so no request waits.
        work = await channel.declare_queue(f"{prefix}work", durable=True)
        total = await channel.declare_queue(f"{prefix}total", durable=True)
        await work.consume(worker.on_work)
        await total.consume(worker.on_total)
        outcomes = await channel.declare_queue(exclusive=True)
        workflows = WORKFLOW.replace("{p}", prefix).replace("{batch}", str(BATCH))
        db = session.journals.new("reduce")
        queues = (f"{prefix}work", f"{prefix}total")
        async with session.own_manager("reduce", workflows, db, prefix, *queues) as manager:
            rss_start = memory_kb(manager.pid, "VmRSS")
            peak_reset = reset_peak(manager.pid)
            sampler = RssSampler(manager.pid)
            sampling = asyncio.create_task(sampler.run())
            started = time.perf_counter()
            message = aio_pika.Message(
                json.dumps({"items": list(range(children))}).encode(),
                content_type="application/json",
                correlation_id=str(uuid.uuid4()),
                reply_to=outcomes.name,
                headers={"workflow": "reducebench"},
            )
            await channel.default_exchange.publish(message, f"{prefix}wm.jobs")
            outcome: AbstractIncomingMessage | None = None
            try:
                async with outcomes.iterator(timeout=timeout_s) as messages:
                    async for outcome in messages:
                        await outcome.ack()
                        break
            except TimeoutError:
                raise BenchError(f"reduce: no outcome in {timeout_s:.0f}s "
                                 f"({worker.answered} children answered)") from None  # fmt: skip
            if outcome is None:  # the connection closed under the iterator (a broker restart)
                raise BenchError("reduce: the outcome queue closed before the job's outcome came")
            ended = time.perf_counter()
            sampler.stop()
            await sampling
            hwm = memory_kb(manager.pid, "VmHWM") if peak_reset else 0
        result = json.loads(outcome.body)
        if result.get("count") != children or result.get("sum") != children * (children - 1) // 2:
            raise BenchError(f"reduce: the accumulator is wrong: {result}")
        assert worker.last_child_at is not None
        return Measured(
            children, ended - started, ended - worker.last_child_at, rss_start / 1024,
            max(sampler.peak_kb, hwm) / 1024, worker.reductions,
        )  # fmt: skip
    finally:
        await channel.close()


async def reduce_scenario(session: Session, children: int, timeout_s: float) -> list[Figure]:
    """A job of `children` children reduced in batches of 100 as they finish: the manager's
    peak RSS (<= 100 MB) and the time from the last child to the outcome (<= 1 s)."""
    m = await _measure(session, children, max(timeout_s, children / 200))
    label = f"reduce, {m.children:,} children"
    return [
        Figure(f"{label}: manager peak RSS", m.rss_peak_mb, "MB",
               target=Target(f"<= {REDUCE_RSS_TARGET_MB:g} MB",
                             m.rss_peak_mb <= REDUCE_RSS_TARGET_MB),
               note=f"{m.rss_start_mb:.0f} MB before the trigger; {m.reductions:,} reductions "
               f"of {BATCH}; the whole job took {m.total_s:.1f} s; no baseline"),
        Figure(f"{label}: result after the last child", m.ready_s * 1000.0, "ms",
               target=Target(f"<= {REDUCE_READY_TARGET_S:g} s",
                             m.ready_s <= REDUCE_READY_TARGET_S),
               note="from the last child's reply being published until the job's outcome "
               "arrived (the last batch reduced meanwhile)"),
    ]  # fmt: skip
