"""Starting, stopping gracefully, draining, and restarting a Worker."""

from __future__ import annotations

import asyncio

import pytest

from pyworker import BrokerError, Worker, WorkerStateError


async def _until(condition, timeout_s: float = 10.0) -> None:
    """Await an async `condition` becoming true, checking every 20 ms, for at most `timeout_s`."""
    async with asyncio.timeout(timeout_s):
        while not await condition():
            await asyncio.sleep(0.02)


async def _no_consumers(caller, queue: str) -> bool:
    declared = await caller.channel.declare_queue(queue, durable=True)
    return declared.declaration_result.consumer_count == 0


async def test_stop_stops_consuming_but_lets_in_flight_handlers_reply(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("slow")
    started, release = asyncio.Event(), asyncio.Event()

    @worker.step(queue)
    async def slow(data):
        started.set()
        await release.wait()
        return {"done": True}

    await worker.start()
    await caller.request(queue, {})
    await asyncio.wait_for(started.wait(), 15)
    stopping = asyncio.create_task(worker.stop())
    await _until(lambda: _no_consumers(caller, queue))

    assert not stopping.done(), "stop() must wait for the in-flight handler"
    assert worker.in_flight == 1
    await caller.request(queue, {"late": True})
    release.set()
    await asyncio.wait_for(stopping, 15)

    assert (await caller.reply()).body == {"done": True}
    assert await caller.declare(queue) == 1, "only the late request is left, untouched"


async def test_stop_timeout_cancels_handlers_and_leaves_their_requests_queued(caller, make_worker):
    worker = make_worker(stop_timeout_s=0.2)
    queue = caller.queue("stuck")
    started = asyncio.Event()

    @worker.step(queue)
    async def stuck(data):
        started.set()
        await asyncio.Event().wait()

    await worker.start()
    await caller.request(queue, {})
    await asyncio.wait_for(started.wait(), 15)
    await worker.stop()

    assert worker.in_flight == 0
    assert caller.replies.empty()
    assert await caller.declare(queue) == 1, "the cancelled request is redelivered later"


async def test_run_until_idle_handles_everything_queued_then_stops(caller, make_worker):
    worker = make_worker(prefetch=2)
    queue = caller.queue("batch")

    @worker.step(queue)
    def square(data):
        return {"square": data["n"] ** 2}

    for n in range(6):
        await caller.request(queue, {"n": n})
    await worker.run_until_idle(timeout_s=30)

    squares = sorted([(await caller.reply()).body["square"] for _ in range(6)])
    assert squares == [0, 1, 4, 9, 16, 25]
    assert not worker.running
    assert await caller.declare(queue) == 0


async def test_a_stopped_worker_can_start_again(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("restart")

    @worker.step(queue)
    async def echo(data):
        return data

    async with worker:
        await caller.request(queue, {"round": 1})
        assert (await caller.reply()).body == {"round": 1}
    assert not worker.running
    async with worker:
        await caller.request(queue, {"round": 2})
        assert (await caller.reply()).body == {"round": 2}


@pytest.mark.parametrize("source", ["argument", "environment"])
async def test_the_queue_prefix_is_prepended_to_every_step_queue(
    caller, make_worker, unique, source
):
    prefix = f"{unique}."
    if source == "argument":
        worker = make_worker(queue_prefix=prefix)
    else:
        worker = make_worker(environ={"QUEUE_PREFIX": prefix})

    @worker.step("prefixed")
    async def echo(data, ctx):
        return {"queue": ctx.queue}

    async with worker:
        await caller.request(caller.queue("prefixed"), {})
        assert (await caller.reply()).body == {"queue": f"{prefix}prefixed"}
    assert list(worker.handlers) == ["prefixed"]


async def test_starting_twice_is_an_error(caller, make_worker):
    worker = make_worker()

    @worker.step(caller.queue("twice"))
    async def echo(data):
        return data

    await worker.start()
    with pytest.raises(WorkerStateError, match="cannot start a worker that is running"):
        await worker.start()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("amqp://guest:s3cret@127.0.0.1:1/", "amqp://guest:******@127.0.0.1:1/"),
        ("amqp://nobody:s3cret@127.0.0.1:5672/", "amqp://nobody:******@127.0.0.1:5672/"),
    ],
)
async def test_an_unreachable_broker_is_a_clear_broker_error(amqp_url, url, shown):
    worker = Worker(url, environ={})

    @worker.step("never-consumed")
    async def echo(data):
        return data

    with pytest.raises(BrokerError, match="cannot connect to RabbitMQ at") as raised:
        await worker.start()
    assert shown in str(raised.value)
    assert "s3cret" not in str(raised.value)
    assert not worker.running
