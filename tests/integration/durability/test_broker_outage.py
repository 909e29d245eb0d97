"""A broker outage as an operator sees it: health that tells the truth, a few readable log lines,
a prompt reconnect, and every job completed.

The stop_app test stops the broker for every client on it: do not run it beside other tests of
the broker.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field

import aio_pika
import httpx
import pytest

from .helpers import broker_connection_of, check_outcomes, manager_log, rabbitmqctl, unsent

JOBS = 100
CHILD_DELAY_S = 0.3  # keeps the jobs in flight through the outage
# How long the broker stays down (the chaos, not a synchronisation): long enough that the
# backoff's wait (a quarter of the outage) would be over 1.5 s by the time it is back.
DOWN_S = 6.0
SAMPLE_EVERY_S = 0.1
# The promise (docs/operating/outages.md): healthy again this soon after the broker accepts
# connections, however long it was down.
BACK_AFTER_ACCEPTING_S = 2.0
OUTCOMES_TIMEOUT_S = 60.0

pytestmark = pytest.mark.skipif(
    shutil.which("rabbitmqctl") is None, reason="needs rabbitmqctl to stop the broker"
)


@dataclass
class HealthSamples:
    """`GET /healthz` every 100 ms: (monotonic time, status code) of each answer."""

    url: str
    samples: list[tuple[float, int]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=1.0) as http:
            while True:
                response = await http.get("/healthz")
                body = response.json()
                if response.status_code == 503:
                    assert body["status"] == "disconnected" and body["since"] >= 0, body
                self.samples.append((time.monotonic(), response.status_code))
                self.changed.set()
                await asyncio.sleep(SAMPLE_EVERY_S)

    async def wait_for(self, status: int, after: float, timeout_s: float) -> float:
        """The time of the first sample taken after `after` that answered `status`."""
        async with asyncio.timeout(timeout_s):
            while True:
                for at, code in self.samples:
                    if at > after and code == status:
                        return at
                self.changed.clear()
                await self.changed.wait()

    def between(self, start: float, end: float) -> list[int]:
        """The status codes sampled in (start, end)."""
        return [code for at, code in self.samples if start < at < end]


async def _accepting(amqp_url: str) -> float:
    """The monotonic time the broker first accepts an AMQP connection (tried every 50 ms)."""
    while True:
        try:
            connection = await aio_pika.connect(amqp_url, timeout=1)
        except (OSError, aio_pika.exceptions.AMQPError, TimeoutError):
            await asyncio.sleep(0.05)  # a measurement's resolution, not a synchronisation
            continue
        at = time.monotonic()
        await connection.close()
        return at


async def _start_jobs(rig, outcomes) -> dict[str, int]:
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    await asyncio.gather(
        *(
            rig.trigger("chaos-counts", {"n": n, "delay_s": CHILD_DELAY_S}, i, outcomes.queue_name)
            for i, n in payloads.items()
        )
    )
    await outcomes.wait_for(1, 30)
    return payloads


async def _all_complete(rig, outcomes, payloads, manager) -> None:
    try:
        await outcomes.wait_for(len(payloads), OUTCOMES_TIMEOUT_S)
    except AssertionError as exc:
        stuck = sorted(set(payloads) - set(outcomes.by_id))
        raise AssertionError(
            f"{exc}; stuck jobs {stuck[:5]}; journaled, never published: {unsent(rig.db)[:5]}\n"
            f"{manager_log(manager)}"
        ) from None
    check_outcomes(outcomes, payloads)


@pytest.mark.stops_broker
@pytest.mark.timeout(170)
async def test_health_and_logs_tell_the_truth_through_a_broker_outage(rig):
    outcomes = await rig.outcome_queue()
    await rig.start_worker()
    manager = await rig.start_manager()
    payloads = await _start_jobs(rig, outcomes)
    health = HealthSamples(rig.api_url)
    sampling = asyncio.create_task(health.run())
    await health.wait_for(200, 0.0, 5)
    logged_before = len(manager.lines)
    try:
        await rabbitmqctl("stop_app")
        stopped = time.monotonic()
        await asyncio.sleep(DOWN_S)
        starting = time.monotonic()
    finally:
        accepting = asyncio.create_task(_accepting(rig.amqp_url))
        await rabbitmqctl("start_app")
        await rabbitmqctl("await_startup")
    try:
        accepted = await asyncio.wait_for(accepting, 10)
        back = await health.wait_for(200, starting, 10)
    finally:
        sampling.cancel()

    # 503 from at most 0.5 s after the stop, every sample until the broker was started again.
    during = health.between(stopped + 0.5, starting)
    assert len(during) >= 30 and set(during) == {503}, health.samples
    assert back - accepted < BACK_AFTER_ACCEPTING_S, (
        f"healthy again {back - accepted:.2f}s after the broker accepted connections "
        f"({back - stopped:.1f}s after it stopped)"
    )

    await _all_complete(rig, outcomes, payloads, manager)
    outage_log = [line for line in manager.lines[logged_before:] if not _per_job(line)]
    text = "\n".join(outage_log)
    assert len(outage_log) < 20, text
    assert re.search(r"WARNING .*RabbitMQ connection lost", text), text
    assert re.search(r"INFO .*RabbitMQ connection restored after \d+\.\ds", text), text
    assert "Traceback" not in text, text
    assert await rig.stop_manager() == 0, manager.output


@pytest.mark.timeout(120)
async def test_a_dropped_connection_is_back_within_a_second_and_no_job_is_lost(rig):
    outcomes = await rig.outcome_queue()
    await rig.start_worker()
    manager = await rig.start_manager()
    payloads = await _start_jobs(rig, outcomes)
    connection = await broker_connection_of(manager.proc.pid)
    logged_before = len(manager.lines)

    await rabbitmqctl("close_connection", connection, "outage test: dropped connection")
    line = await manager.wait_for_line(r"RabbitMQ connection restored after", 10)

    down_s = float(re.search(r"restored after (\d+\.\d)s", line).group(1))
    assert down_s <= 1.0, line
    await _all_complete(rig, outcomes, payloads, manager)
    outage_log = [line for line in manager.lines[logged_before:] if not _per_job(line)]
    assert len(outage_log) < 10, "\n".join(outage_log)
    assert await rig.stop_manager() == 0, manager.output


def _per_job(line: str) -> bool:
    """A job's own start and end lines, which any run logs, outage or not."""
    return "job started job=" in line or "job completed job=" in line
