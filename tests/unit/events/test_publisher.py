"""The broker publisher on the in-memory transport: levels, routing keys, backlog, outages."""

from __future__ import annotations

import asyncio
import json

from workflow_manager.events import EventHub
from workflow_manager.events.publisher import EventPublisher
from workflow_manager.transport.memory import MemoryTransport

from .test_hub import CHILD, ROOT, dispatch, finished, started, step_finished


def _published(transport: MemoryTransport) -> list[tuple[str, str, dict]]:
    return [
        (m.queue, m.headers["x-event"], json.loads(m.body))
        for m in transport.sent_to_exchange("wm.events")
    ]


async def _run(level: str) -> list[tuple[str, str, dict]]:
    transport = MemoryTransport()
    hub = EventHub(clock=lambda: 1.0)
    publisher = EventPublisher(transport, "wm", level)
    hub.add_sink(publisher)
    await publisher.start()
    assert transport.exchanges == {"wm.events"}
    hub.observe([started(), dispatch("a")])
    hub.observe([started(CHILD, ROOT), step_finished("failed", "timeout")])
    hub.observe([finished("failed", CHILD, ROOT), finished("completed")])
    await publisher.drain(timeout_s=5)
    await publisher.stop()
    return _published(transport)


async def test_level_jobs_publishes_only_top_level_job_events():
    published = await _run("jobs")
    assert [(key, kind) for key, kind, _ in published] == [
        ("wf.job.started", "job.started"),
        ("wf.job.completed", "job.completed"),
    ]
    assert published[1][2] == {
        "type": "job.completed", "job": ROOT, "root": ROOT, "workflow": "wf",
        "status": "completed", "at": 12.0,
    }  # fmt: skip


async def test_level_steps_publishes_every_event_in_order():
    published = await _run("steps")
    assert [key for key, _, _ in published] == [
        "wf.job.started", "wf.step.dispatched", "wf.job.started", "wf.step.failed",
        "wf.job.failed", "wf.job.completed",
    ]  # fmt: skip
    assert published[2][2]["parent"] == ROOT and published[3][2]["reason"] == "timeout"


async def test_a_full_backlog_drops_the_newest_and_counts_them():
    transport = MemoryTransport()
    publisher = EventPublisher(transport, "wm", "jobs", backlog_limit=2)
    hub = EventHub()
    hub.add_sink(publisher)
    hub.observe([started(), finished(), started(), finished()])  # before it starts
    assert publisher.dropped == 2
    await publisher.start()
    await publisher.drain(timeout_s=5)
    await publisher.stop()
    assert [kind for _, kind, _ in _published(transport)] == ["job.started", "job.completed"]


async def test_events_wait_out_a_broker_outage():
    transport = MemoryTransport()
    publisher = EventPublisher(transport, "wm", "jobs")
    hub = EventHub()
    hub.add_sink(publisher)
    await publisher.start()
    transport.connected = False
    hub.observe([started()])
    while not transport.held_counts:  # until it has tried, and failed, once
        await asyncio.sleep(0)
    assert _published(transport) == []
    await transport.restore()
    await transport.wait_for(lambda sent: len(sent) == 1)
    await publisher.stop()
    assert [kind for _, kind, _ in _published(transport)] == ["job.started"]


class _ClosedTransport(MemoryTransport):
    """As the broker is once closed: every publish refused, and waiting for it returns at once."""

    attempts = 0

    async def wait_connected(self) -> None:
        return None

    async def publish_unconfirmed(self, message) -> None:
        self.attempts += 1
        if self.attempts > 100:  # the publisher spins: end it (the loop would hang for good)
            raise RuntimeError("publisher retried 100 times without yielding")
        await super().publish_unconfirmed(message)


async def test_events_left_when_the_transport_closes_do_not_hang_the_stop():
    transport = _ClosedTransport()
    publisher = EventPublisher(transport, "wm", "jobs", retry_s=0.01)
    hub = EventHub()
    hub.add_sink(publisher)
    await publisher.start()
    await transport.close()
    hub.observe([started()])
    await asyncio.sleep(0.05)  # a few retries' worth

    await publisher.stop()

    assert 1 <= transport.attempts < 100
    assert _published(transport) == []
