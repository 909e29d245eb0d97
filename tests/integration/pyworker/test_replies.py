"""Successful requests: the reply's properties, headers and body, for every handler style."""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

from pyworker import StepContext


class Greeting(BaseModel):
    name: str
    times: int = 1


class Greeted(BaseModel):
    greeting: str


async def test_async_handler_reply_carries_correlation_id_attempt_and_body(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("echo")

    @worker.step(queue)
    async def echo(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        return {"echo": data, "job": ctx.job_id, "step": ctx.step, "workflow": ctx.workflow}

    await worker.start()
    correlation_id = await caller.request(queue, {"n": 1}, attempt=3, step="echo-step")
    reply = await caller.reply()

    job_id = correlation_id.split(":")[0]
    assert reply.correlation_id == correlation_id
    assert reply.headers == {"x-attempt": 3}
    assert reply.content_type == "application/json"
    assert reply.persistent
    assert reply.body == {
        "echo": {"n": 1},
        "job": job_id,
        "step": "echo-step",
        "workflow": "test-workflow",
    }


async def test_sync_handler_runs_off_the_event_loop(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("sync")

    @worker.step(queue)
    def plain(data):
        return {"double": data["n"] * 2, "thread": threading.current_thread().name}

    await worker.start()
    await caller.request(queue, {"n": 21})
    reply = await caller.reply()

    assert reply.body["double"] == 42
    assert reply.body["thread"].startswith("pyworker")
    assert "x-error" not in reply.headers


async def test_pydantic_input_is_validated_and_model_result_dumped(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("typed")

    @worker.step(queue)
    def greet(data: Greeting, ctx) -> Greeted:
        return Greeted(greeting=" ".join([f"hello {data.name}"] * data.times))

    await worker.start()
    await caller.request(queue, {"name": "Nell", "times": "2", "extra": "ignored"})

    assert (await caller.reply()).body == {"greeting": "hello Nell hello Nell"}


async def test_none_result_becomes_empty_object(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("none")

    @worker.step(queue)
    async def nothing(data):
        return None

    await worker.start()
    await caller.request(queue, {})
    reply = await caller.reply()

    assert reply.body == {}
    assert reply.headers == {"x-attempt": 1}


async def test_missing_attempt_header_is_answered_as_attempt_one(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("attempt")

    @worker.step(queue)
    async def attempt(data, ctx):
        return {"attempt": ctx.attempt}

    await worker.start()
    await caller.request(queue, {}, attempt=None)
    reply = await caller.reply()

    assert reply.body == {"attempt": 1}
    assert reply.headers["x-attempt"] == 1
