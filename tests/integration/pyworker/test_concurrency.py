"""Concurrency: prefetch bounds requests in flight; sync handlers run in parallel threads."""

from __future__ import annotations

import asyncio
import threading


async def test_prefetch_bounds_the_requests_in_flight_per_step(caller, make_worker):
    worker = make_worker(prefetch=2)
    queue = caller.queue("limited")
    started: asyncio.Queue[int] = asyncio.Queue()
    release = asyncio.Event()

    @worker.step(queue)
    async def slow(data):
        started.put_nowait(data["n"])
        await release.wait()
        return data

    for n in range(3):
        await caller.request(queue, {"n": n})
    await worker.start()
    for _ in range(2):
        await asyncio.wait_for(started.get(), 15)

    assert worker.in_flight == 2
    assert await caller.declare(queue) == 1, "the third request waits in the queue"
    release.set()
    bodies = [(await caller.reply()).body for _ in range(3)]
    assert sorted(body["n"] for body in bodies) == [0, 1, 2]


async def test_sync_handlers_run_concurrently_without_blocking_async_ones(caller, make_worker):
    worker = make_worker(prefetch=2)
    blocking, quick = caller.queue("blocking"), caller.queue("quick")
    both_running = threading.Barrier(2)
    unblock = threading.Event()

    @worker.step(blocking)
    def wait_for_each_other(data):
        both_running.wait(timeout=15)  # only passes if two run at the same time
        unblock.wait(timeout=15)
        return {"n": data["n"]}

    @worker.step(quick)
    async def answer(data):
        return {"quick": True}

    await worker.start()
    await caller.request(blocking, {"n": 1})
    await caller.request(blocking, {"n": 2})
    await caller.request(quick, {})

    assert (await caller.reply()).body == {"quick": True}, "the loop is free while threads block"
    unblock.set()
    replies = [await caller.reply() for _ in range(2)]
    assert all("x-error" not in reply.headers for reply in replies)
    assert sorted(reply.body["n"] for reply in replies) == [1, 2]
