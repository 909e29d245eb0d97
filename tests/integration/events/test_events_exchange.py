"""Run events on the broker: the `<queue>.events` topic exchange, as another system binds to it."""

from __future__ import annotations

import json
import uuid

import aio_pika


async def _bind(site, key: str = "#") -> aio_pika.abc.AbstractQueue:
    queue = await site.channel.declare_queue(exclusive=True)
    await queue.bind(site.exchange, routing_key=key)
    return queue


async def _until_job_ends(queue, job_id: str) -> list[tuple[str, dict]]:
    """(routing key, body) of each event until `job_id`'s job.* end event."""
    got = []
    async with queue.iterator(timeout=30) as messages:
        async for message in messages:
            await message.ack()
            body = json.loads(message.body)
            got.append((message.routing_key, body))
            assert message.headers["x-event"] == body["type"]
            if body["job"] == job_id and body["type"] in ("job.completed", "job.failed"):
                return got
    raise AssertionError(f"no end event; got {got}")


async def test_by_default_the_exchange_gets_the_job_events_of_top_level_jobs(site):
    running = await site()
    queue = await _bind(running, "one.job.*")  # what a system reacting to jobs would bind
    fan_queue = await _bind(running, "fan.#")
    await running.start_worker()
    job_id, fan_id = str(uuid.uuid4()), str(uuid.uuid4())
    await running.submit("one", {"x": 1}, job_id)
    await running.submit("fan", {"group": [1, 2, 3]}, fan_id)

    events = await _until_job_ends(queue, job_id)
    assert [key for key, _ in events] == ["one.job.started", "one.job.completed"]
    assert events[1][1]["job"] == job_id and events[1][1]["status"] == "completed"
    fan_events = await _until_job_ends(fan_queue, fan_id)
    # No step events, and no child jobs' events: the broker's load per step does not grow.
    assert [key for key, _ in fan_events] == ["fan.job.started", "fan.job.completed"]


async def test_with_steps_the_exchange_gets_step_events_too(site):
    running = await site("--events", "steps")
    queue = await _bind(running)
    await running.start_worker()
    job_id = str(uuid.uuid4())
    await running.submit("bad", {}, job_id)
    events = await _until_job_ends(queue, job_id)
    assert [(key, body.get("step")) for key, body in events] == [
        ("bad.job.started", None),
        ("bad.step.dispatched", "only"),
        ("bad.step.completed", "only"),
        ("bad.step.dispatched", "boom"),
        ("bad.step.failed", "boom"),
        ("bad.job.failed", None),
    ]
    assert events[4][1]["reason"] == "error"


async def test_with_events_off_no_exchange_is_declared(site):
    running = await site("--events", "off")
    await running.start_worker()
    job_id = str(uuid.uuid4())
    await running.submit("one", {}, job_id)
    await running.outcome_of(job_id)
    # A failed passive declare closes its channel (and here, its own connection).
    async with await aio_pika.connect(running.amqp_url) as connection:
        channel = await connection.channel()
        try:
            await channel.declare_exchange(running.exchange, passive=True)
        except aio_pika.exceptions.ChannelClosed as exc:
            assert "NOT_FOUND" in str(exc) or "404" in str(exc)
        else:
            raise AssertionError("the events exchange exists with --events off")
