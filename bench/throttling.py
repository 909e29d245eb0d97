"""The rate scenario (opt-in: `--only rate`): how precisely a step's `rate: {limit, per}`
holds under a backlog that always has work waiting.

One workflow of one step, `call`, with `rate: {limit: 100, per: 1}` (`LIMIT` in any `PER`
seconds: a sliding window). A fresh manager on a fresh SQLite journal; N jobs triggered at
once, more than the window lets go during the run, so the line never runs dry. The bench
process is the step's worker: it answers each request at once and notes when it came
(wall clock). After the first request, the run lasts `SKIP_S` + the measured seconds (+ a
margin); then the manager is stopped with the rest of the backlog still waiting, and the
journal's `dispatched` rows say when each request was sent.

The figures: the achieved rate over the measured interval (from the first request +
`SKIP_S`: the first window's burst left out) as a ratio of the limit, and the busiest window
(most requests sent in any `PER` seconds, the whole run, the first burst too: it must be
<= `LIMIT`) as the journal counted the starts; and, with no target, the same window over
the broker's confirms (the journal's `sent_at`: a start is counted when the manager decides
it, the request is published and confirmed a varying moment later) and over the requests'
arrivals at the worker (delivery jitter can bunch them there).

There is no baseline: the driver has no rate limit, so the limit itself is the reference.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from bench.procs import BenchError
from bench.report import Figure, Target
from bench.session import Session

__all__ = [
    "LIMIT",
    "PER",
    "RATE_TARGET",
    "WORKFLOW",
    "achieved",
    "backlog_needed",
    "busiest_window",
    "rate_scenario",
]

LIMIT = 100  # requests in any PER seconds: fast enough to measure, far below what one
PER = 1.0  # manager sends (~2,000 steps/s), so the window, not the manager, sets the pace
SKIP_S = 1.0  # the first window's burst (LIMIT at once) is not the steady rate
MARGIN_S = 0.5  # run past the measured interval: the journal's clock and ours differ a little
RATE_TARGET = 0.95  # the achieved rate must be at least this share of the limit
PUBLISH_CHUNK = 250  # triggers published (and confirmed) together

# `{p}`: this scenario's queues.
WORKFLOW = """\
workflows:
  - name: ratebench
    steps:
      - {name: call, queue: "{p}call", rate: {limit: {limit}, per: {per}}}
"""


def busiest_window(times: Sequence[float], per: float) -> int:
    """The most of `times` (sorted) within any `per` seconds: [t, t + per) for each t."""
    return max((bisect.bisect_left(times, at + per) - i for i, at in enumerate(times)), default=0)


def achieved(times: Sequence[float], begin: float, seconds: float) -> float:
    """How many of `times` (sorted) a second lie in [begin, begin + seconds)."""
    inside = bisect.bisect_left(times, begin + seconds) - bisect.bisect_left(times, begin)
    return inside / seconds


def backlog_needed(seconds: float) -> int:
    """The requests the window lets go over a run measuring `seconds`: a backlog of jobs
    must be larger, or the line runs dry and the rate measures the backlog."""
    return int(LIMIT * (SKIP_S + seconds + MARGIN_S) / PER) + LIMIT


@dataclass
class StepWorker:
    """The rated step's worker, in the bench process: answers every request at once and
    notes when each came (wall clock, as the journal's times)."""

    channel: AbstractChannel
    arrived: list[float] = field(default_factory=list)
    first: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_request(self, message: AbstractIncomingMessage) -> None:
        """Note the arrival, answer, ack."""
        self.arrived.append(time.time())
        self.first.set()
        headers = {}
        if message.headers and "x-attempt" in message.headers:
            headers["x-attempt"] = message.headers["x-attempt"]
        reply = aio_pika.Message(
            json.dumps({"ok": True}).encode(),
            content_type="application/json",
            correlation_id=message.correlation_id or "",
            headers=headers,
        )
        await self.channel.default_exchange.publish(reply, message.reply_to or "")
        await message.ack()


@dataclass(frozen=True)
class Measured:
    """One run: when each request was sent (journal) and when it reached the worker."""

    jobs: int
    seconds: float  # the measured interval
    sent: list[float]  # the journal's `dispatched` times, sorted
    confirmed: list[float]  # the journal's `sent_at` (the broker's confirms), sorted
    received: list[float]  # the worker's arrival times, sorted

    @property
    def begin(self) -> float:
        """The measured interval's start: the first request + SKIP_S."""
        return self.sent[0] + SKIP_S

    def per_second(self) -> list[int]:
        """Requests sent in each whole second of the measured interval."""
        return [round(achieved(self.sent, self.begin + s, 1.0)) for s in range(int(self.seconds))]


async def _trigger(channel: AbstractChannel, queue: str, jobs: int) -> None:
    """Publish `jobs` jobs of the rated workflow, confirmed a chunk at a time."""

    async def one(n: int) -> None:
        message = aio_pika.Message(
            json.dumps({"n": n}).encode(),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            correlation_id=str(uuid.uuid4()),
            headers={"workflow": "ratebench"},
        )
        await channel.default_exchange.publish(message, f"{queue}.jobs")

    for start in range(0, jobs, PUBLISH_CHUNK):
        await asyncio.gather(*(one(n) for n in range(start, min(start + PUBLISH_CHUNK, jobs))))


def _sent_times(db: str) -> tuple[list[float], list[float]]:
    """The journal's `dispatched` rows: when each request was sent (the time its start was
    counted), and when the broker confirmed those it did (`sent_at`); each oldest first."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT at, sent_at FROM events WHERE kind = 'dispatched' ORDER BY at")
        pairs = [(float(at), sent_at) for at, sent_at in rows]
    return [at for at, _ in pairs], sorted(float(s) for _, s in pairs if s is not None)


async def _measure(session: Session, jobs: int, seconds: float, timeout_s: float) -> Measured:
    assert session.connection is not None
    if jobs < backlog_needed(seconds):
        raise BenchError(f"rate: {jobs} jobs run dry before {seconds:g} s are measured "
                         f"(at least {backlog_needed(seconds)})")  # fmt: skip
    prefix = f"{session.prefix}rate."
    db = session.journals.new("rate", sqlite=True)  # read back below, --db or not
    channel = await session.connection.channel(publisher_confirms=True)
    await channel.set_qos(prefetch_count=2 * LIMIT)
    worker = StepWorker(channel)
    try:
        # Declared as the manager declares it, before the manager, so no request waits.
        queue = await channel.declare_queue(f"{prefix}call", durable=True)
        await queue.consume(worker.on_request)
        workflows = (
            WORKFLOW.replace("{p}", prefix).replace("{limit}", str(LIMIT))
            .replace("{per}", f"{PER:g}")
        )  # fmt: skip
        async with session.own_manager("rate", workflows, db, prefix, f"{prefix}call"):
            await _trigger(channel, f"{prefix}wm", jobs)
            try:
                await asyncio.wait_for(worker.first.wait(), timeout_s)
            except TimeoutError:
                raise BenchError(f"rate: no request in {timeout_s:.0f}s") from None
            # The measurement itself: the window sets the pace, the bench only watches.
            await asyncio.sleep(SKIP_S + seconds + MARGIN_S)
        sent, confirmed = _sent_times(db)
    finally:
        await channel.close()
    if not sent or sent[-1] < sent[0] + SKIP_S + seconds:
        raise BenchError(f"rate: {len(sent)} requests sent, the last too early to measure "
                         f"{seconds:g} s")  # fmt: skip
    if len(sent) >= jobs:
        raise BenchError(f"rate: all {jobs} jobs were sent: the backlog ran dry")
    return Measured(jobs, seconds, sent, confirmed, sorted(worker.arrived))


async def rate_scenario(
    session: Session, jobs: int, seconds: float, timeout_s: float
) -> list[Figure]:
    """`jobs` jobs at once through a step with `rate: {limit: 100, per: 1}`: the achieved
    rate over `seconds` (>= 0.95 x the limit) and the busiest window (<= the limit)."""
    m = await _measure(session, jobs, seconds, timeout_s)
    rate = achieved(m.sent, m.begin, m.seconds)
    busiest = busiest_window(m.sent, PER)
    confirmed = busiest_window(m.confirmed, PER)
    received = busiest_window(m.received, PER)
    steady = busiest_window(m.received[bisect.bisect_left(m.received, m.begin) :], PER)
    counted = round(rate * m.seconds)
    each = m.per_second()
    label = f"rate, {LIMIT} per {PER:g} s, {m.seconds:g} s measured"
    return [
        Figure(f"{label}: achieved", rate, "requests/s", LIMIT / PER,
               Target(f">= {RATE_TARGET:g} x the limit", rate >= RATE_TARGET * LIMIT / PER),
               note=f"baseline: the limit; {counted:,} requests in {m.seconds:g} s (the "
               f"journal's dispatched rows, the first {SKIP_S:g} s left out); whole seconds "
               f"held {min(each)}-{max(each)}; "
               f"{m.jobs - len(m.sent):,} of {m.jobs:,} jobs still waiting at the end"),
        Figure(f"{label}: busiest window (journal)", busiest, "requests",
               target=Target(f"<= {LIMIT}", busiest <= LIMIT),
               note=f"most requests sent in any {PER:g} s of the run, the first burst too"),
        Figure(f"{label}: busiest window (broker confirms)", confirmed, "requests",
               note=f"most requests confirmed by the broker in any {PER:g} s (the journal's "
               "sent_at: a start is counted when decided, published and confirmed later)"),
        Figure(f"{label}: busiest window (worker)", received, "requests",
               note=f"most requests reaching the worker (the bench process) in any {PER:g} s; "
               f"after the first {SKIP_S:g} s: {steady}; delivery jitter can bunch them"),
    ]  # fmt: skip
