"""Failures become x-error replies and the request is still acked; the worker never crashes."""

from __future__ import annotations

import pytest
from pydantic import BaseModel


class Section(BaseModel):
    section: str


async def _stopped_queue_count(caller, worker, queue: str) -> int:
    """Ready messages in `queue` after the worker closed (unacked ones would be back by then)."""
    await worker.stop()
    return await caller.declare(queue)


async def test_exception_becomes_x_error_reply_and_request_is_acked(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("fails")

    @worker.step(queue)
    async def fails(data):
        raise ValueError("bad section")

    await worker.start()
    correlation_id = await caller.request(queue, {"section": 1}, attempt=2)
    reply = await caller.reply()

    assert reply.correlation_id == correlation_id
    assert reply.headers == {
        "x-attempt": 2,
        "x-error": "ValueError: bad section",
        "x-error-type": "ValueError",
    }
    assert reply.body == {"error": {"type": "ValueError", "message": "ValueError: bad section"}}
    assert await _stopped_queue_count(caller, worker, queue) == 0


async def test_sync_handler_exception_is_reported_too(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("sync-fails")

    @worker.step(queue)
    def fails(data):
        return {"ratio": 1 / data["zero"]}

    await worker.start()
    await caller.request(queue, {"zero": 0})

    assert (await caller.reply()).headers["x-error-type"] == "ZeroDivisionError"


async def test_invalid_input_is_answered_with_the_validation_message(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("typed")

    @worker.step(queue)
    def count(data: Section):
        return {"length": len(data.section)}

    await worker.start()
    await caller.request(queue, {"sektion": "typo"})
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == "ValidationError"
    assert "section" in reply.headers["x-error"]
    assert "Field required" in reply.headers["x-error"]
    assert reply.body["error"]["type"] == "ValidationError"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2, 3]", "must be a JSON object, got list"),
        (b"\xff\xfe\x00", "not valid JSON"),
    ],
)
async def test_a_body_that_is_not_a_json_object_gets_an_x_error(
    caller, make_worker, body, expected
):
    worker = make_worker()
    queue = caller.queue("raw")
    called = []

    @worker.step(queue)
    def never(data):
        called.append(data)

    await worker.start()
    await caller.request(queue, body)
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == "InvalidRequest"
    assert expected in reply.headers["x-error"]
    assert called == []
    assert await _stopped_queue_count(caller, worker, queue) == 0


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ([1, 2], "must return a JSON object (dict) or None, got list"),
        ("text", "got str"),
        ({"when": object()}, "not JSON-serialisable"),
        ({"x": float("nan")}, "not JSON-serialisable"),
    ],
)
async def test_a_result_that_is_not_a_json_object_gets_an_x_error(
    caller, make_worker, result, expected
):
    worker = make_worker()
    queue = caller.queue("bad-result")

    @worker.step(queue)
    async def bad(data):
        return result

    await worker.start()
    await caller.request(queue, {})
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == "InvalidResult"
    assert expected in reply.headers["x-error"]


async def test_a_request_without_reply_to_is_acked_without_reply(caller, make_worker):
    worker = make_worker()
    queue = caller.queue("no-reply")

    @worker.step(queue)
    async def handler(data):
        return {"ok": True}

    await worker.start()
    await caller.request(queue, {}, reply_to=None)
    await caller.request(queue, {"second": True})  # the worker is still alive and answering
    assert (await caller.reply()).body == {"ok": True}
    assert await _stopped_queue_count(caller, worker, queue) == 0
    assert caller.replies.empty()
