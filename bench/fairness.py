"""The fairness scenario (opt-in: `--only fairness`): while tenant A has N children waiting
for a step's `concurrency`, how soon tenant B's first request of that step reaches the worker.

One workflow: a task step fans the payload's `items` out to children whose step `work` has
`concurrency` and a step `fairness: {key: meta.tenant}` (the tenant is the trigger's
`x-meta`). The bench process is the worker of `work`: it answers each request at once and
records when each arrives. Tenant A's job fans out N children (all created at once:
`max_in_flight` is N), of which `SLOTS` run at a time; once `A_SERVED_FIRST` of A's requests
were answered (the fan-out is done, the line full), tenant B's job of one child is
triggered, and the figure is the time from publishing B's trigger until B's request reaches
the worker (issue: within 1 s while A has 100,000 waiting). A's job is not run to its end:
the manager is stopped with A's children still waiting.

There is no baseline: the driver has no limits to be fair under, so the figures are absolute.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from bench.procs import BenchError
from bench.report import Figure, Target
from bench.session import Session

__all__ = ["FAIRNESS_TARGET_S", "fairness"]

FAIRNESS_TARGET_S = 1.0  # the issue: B's first step within 1 s of its trigger
SLOTS = 10  # the step's concurrency, shared by the tenants
A_SERVED_FIRST = 200  # A's requests answered before B's trigger: the line is full by then
B_ITEM = "tenant-b"  # B's one element: A's are whole numbers

# `{p}`: this scenario's queues; `{n}`: A's children, all made at once.
WORKFLOW = """\
workflows:
  - name: fairbench
    steps:
      - {name: fan, task: each}
    tasks:
      - name: each
        itemListKey: items
        max_in_flight: {n}
        steps:
          - name: work
            queue: "{p}work"
            concurrency: {slots}
            fairness: {key: meta.tenant}
"""


@dataclass
class StepWorker:
    """The limited step's worker, in the bench process: answers every request at once
    (`{"item": x}`) and records when A's requests and B's arrive."""

    channel: AbstractChannel
    a_arrived: list[float] = field(default_factory=list)
    a_answered: int = 0
    b_arrived: float | None = None
    a_served: asyncio.Event = field(default_factory=asyncio.Event)
    b_came: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_request(self, message: AbstractIncomingMessage) -> None:
        """Note the arrival, answer, ack."""
        arrived = time.perf_counter()
        item = json.loads(message.body)["item"]
        if item == B_ITEM:
            self.b_arrived = arrived
            self.b_came.set()
        else:
            self.a_arrived.append(arrived)
        reply = aio_pika.Message(
            json.dumps({"item": item}).encode(),
            content_type="application/json",
            correlation_id=message.correlation_id or "",
        )
        await self.channel.default_exchange.publish(reply, message.reply_to or "")
        await message.ack()
        if item != B_ITEM:
            self.a_answered += 1
            if self.a_answered >= A_SERVED_FIRST:
                self.a_served.set()


@dataclass(frozen=True)
class Measured:
    """One run: A's fan-out, and B's wait."""

    children: int
    fan_out_s: float  # A's trigger until A's first request reached the worker
    waiting: int  # A's children not yet sent to the worker when B was triggered
    b_first_s: float  # B's trigger until B's request reached the worker
    a_between: int  # A's requests that reached the worker meanwhile


async def _trigger(channel: AbstractChannel, queue: str, tenant: str, items: list) -> str:
    """Publish a job of `tenant` (its `x-meta`) fanning out `items`; its id."""
    job_id = str(uuid.uuid4())
    message = aio_pika.Message(
        json.dumps({"items": items}).encode(),
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        correlation_id=job_id,
        headers={"workflow": "fairbench", "x-meta": json.dumps({"tenant": tenant})},
    )
    await channel.default_exchange.publish(message, f"{queue}.jobs")
    return job_id


async def _measure(session: Session, children: int, timeout_s: float) -> Measured:
    assert session.connection is not None
    prefix = f"{session.prefix}fair."
    channel = await session.connection.channel(publisher_confirms=True)
    await channel.set_qos(prefetch_count=4 * SLOTS)
    worker = StepWorker(channel)
    try:
        # Declared as the manager declares it, before the manager, so no request waits.
        queue = await channel.declare_queue(f"{prefix}work", durable=True)
        await queue.consume(worker.on_request)
        workflows = (
            WORKFLOW.replace("{p}", prefix).replace("{n}", str(children))
            .replace("{slots}", str(SLOTS))
        )  # fmt: skip
        db = session.journals.new("fairness")
        async with session.own_manager("fairness", workflows, db, prefix, f"{prefix}work"):
            started = time.perf_counter()
            await _trigger(channel, f"{prefix}wm", "a", list(range(children)))
            try:
                await asyncio.wait_for(worker.a_served.wait(), timeout_s)
            except TimeoutError:
                answered = f"{worker.a_answered} of tenant A's first {A_SERVED_FIRST} requests"
                raise BenchError(f"fairness: {answered} in {timeout_s:.0f}s") from None
            fan_out_s = worker.a_arrived[0] - started
            waiting = children - len(worker.a_arrived)
            a_before = len(worker.a_arrived)
            triggered = time.perf_counter()
            await _trigger(channel, f"{prefix}wm", "b", [B_ITEM])
            try:
                await asyncio.wait_for(worker.b_came.wait(), timeout_s)
            except TimeoutError:
                raise BenchError(f"fairness: tenant B's request did not come in "
                                 f"{timeout_s:.0f}s") from None  # fmt: skip
            assert worker.b_arrived is not None
            between = sum(1 for at in worker.a_arrived[a_before:] if at < worker.b_arrived)
        return Measured(children, fan_out_s, waiting, worker.b_arrived - triggered, between)
    finally:
        await channel.close()


async def fairness(session: Session, children: int, timeout_s: float) -> list[Figure]:
    """Tenant A's job of `children` children behind a step's `concurrency` with the step's
    `fairness` by tenant; then tenant B's job of one child: the time from B's trigger until
    its request reaches the worker (<= 1 s), and A's requests sent meanwhile."""
    measured = await _measure(session, children, max(timeout_s, children / 1000))
    label = f"fairness, {measured.waiting:,} of tenant A's children waiting"
    ms = 1000.0
    return [
        Figure(f"{label}: tenant B's first step", measured.b_first_s * ms, "ms",
               target=Target(f"<= {FAIRNESS_TARGET_S:g} s",
                             measured.b_first_s <= FAIRNESS_TARGET_S),
               note=f"from B's trigger until its request reached the worker; step concurrency "
               f"{SLOTS}; A's {children:,}-children fan-out reached the worker "
               f"{measured.fan_out_s:.1f} s after its trigger; no baseline"),
        Figure(f"{label}: A's requests before B's", measured.a_between, "requests",
               note=f"A's requests that reached the worker between B's trigger and B's "
               f"request (the {SLOTS} slots in use at B's trigger free one by one)"),
    ]  # fmt: skip
