"""The wire protocol as a worker in another language sees it: the test itself plays the worker."""

from __future__ import annotations

import json
import uuid

import aio_pika

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
      - {name: next, depends: [hand], queue: "{p}.next"}
"""


async def _take_request(sys, queue_name: str) -> aio_pika.abc.AbstractIncomingMessage:
    queue = await sys.channel.declare_queue(queue_name, durable=True)
    async with queue.iterator(timeout=20) as messages:
        async for message in messages:
            await message.ack()
            return message
    raise AssertionError("no request")


async def test_request_properties_follow_the_protocol(system):
    sys = await system(MANUAL)
    job_id = str(uuid.uuid4())
    outcome_queue = await sys.reply_queue()
    await sys.trigger("manual", {"k": "v"}, job_id, outcome_queue.name)
    request = await _take_request(sys, f"{sys.prefix}.hand")
    assert request.correlation_id == f"{job_id}:hand"
    assert request.reply_to == sys.manager.queue
    assert request.content_type == "application/json"
    assert request.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
    assert request.message_id == f"{job_id}:hand:1"
    assert request.headers["x-workflow"] == "manual"
    assert request.headers["x-attempt"] == 1
    assert json.loads(request.body) == {"k": "v"}
    # An empty reply body counts as {}; the input is not carried over.
    await sys.answer(request, b"")
    second = await _take_request(sys, f"{sys.prefix}.next")
    assert json.loads(second.body) == {}
    await sys.answer(second, b'{"done": true}')
    outcome = await sys.next_outcome(outcome_queue)
    assert (outcome.status, outcome.body) == ("completed", {"done": True})


async def test_non_object_reply_fails_the_step(system):
    sys = await system(MANUAL)
    outcome_queue = await sys.reply_queue()
    await sys.trigger("manual", {}, str(uuid.uuid4()), outcome_queue.name)
    request = await _take_request(sys, f"{sys.prefix}.hand")
    await sys.answer(request, b"[1, 2]")
    outcome = await sys.next_outcome(outcome_queue)
    assert outcome.status == "failed"
    assert outcome.body["error"]["step"] == "hand"
    assert "JSON object" in outcome.body["error"]["message"]


async def test_x_error_reply_fails_the_step_with_its_message(system):
    sys = await system(MANUAL)
    outcome_queue = await sys.reply_queue()
    await sys.trigger("manual", {}, str(uuid.uuid4()), outcome_queue.name)
    request = await _take_request(sys, f"{sys.prefix}.hand")
    await sys.answer(request, b"", **{"x-error": "disk full"})
    outcome = await sys.next_outcome(outcome_queue)
    assert outcome.body["error"] == {"step": "hand", "message": "disk full"}


async def test_stray_replies_are_logged_and_the_manager_carries_on(system):
    sys = await system(MANUAL, log_level="debug")  # every ignored reply logged
    stray = f"{uuid.uuid4()}:hand"
    for correlation_id in (stray, "garbage-without-colon"):
        message = aio_pika.Message(b"{}", correlation_id=correlation_id)
        await sys.channel.default_exchange.publish(message, sys.manager.queue)
    await sys.manager.process.wait_for_line(r"ignored .*: no job")
    # A reply that names no step at all cannot be processed: kept as a dead letter.
    await sys.manager.process.wait_for_line(r"dead-lettered .*garbage-without-colon")
    outcome_queue = await sys.reply_queue()
    job_id = str(uuid.uuid4())
    await sys.trigger("manual", {}, job_id, outcome_queue.name)
    request = await _take_request(sys, f"{sys.prefix}.hand")
    await sys.answer(request, b"{}")
    # A duplicate of the same reply changes nothing.
    await sys.answer(request, b'{"twice": true}')
    await sys.manager.process.wait_for_line(r"ignored .*:hand: step 'hand' is completed")
    second = await _take_request(sys, f"{sys.prefix}.next")
    await sys.answer(second, b'{"ok": 1}')
    assert (await sys.next_outcome(outcome_queue)).body == {"ok": 1}


async def test_a_worker_that_nacks_and_requeues_does_not_disturb_the_manager(system):
    """Original-style workers nack(requeue) on error: the request loops, other jobs go on."""
    sys = await system(MANUAL)
    looping = await sys.reply_queue()
    await sys.trigger("manual", {"n": 1}, str(uuid.uuid4()), looping.name)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.hand", durable=True)
    deliveries = 0
    async with queue.iterator(timeout=20) as messages:
        async for message in messages:
            deliveries += 1
            if deliveries < 4:
                await message.nack(requeue=True)
                continue
            first = message
            break
    assert first.redelivered
    # While that request was bouncing, the manager served a second job to the end.
    other = await sys.reply_queue()
    other_id = str(uuid.uuid4())
    await sys.trigger("manual", {"n": 2}, other_id, other.name)
    second = await _take_request(sys, f"{sys.prefix}.hand")
    assert second.correlation_id == f"{other_id}:hand"
    await sys.answer(second, b'{"second": true}')
    await sys.answer(await _take_request(sys, f"{sys.prefix}.next"), b'{"n": 2}')
    assert (await sys.next_outcome(other)).body == {"n": 2}
    # The worker finally succeeds on the looping request: that job completes too.
    await first.ack()
    await sys.answer(first, b"{}")
    await sys.answer(await _take_request(sys, f"{sys.prefix}.next"), b'{"n": 1}')
    assert (await sys.next_outcome(looping)).body == {"n": 1}
