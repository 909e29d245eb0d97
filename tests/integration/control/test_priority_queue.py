"""Priorities on the wire: a step queue its owner declared with x-max-priority keeps working."""

from __future__ import annotations

import json
import uuid

import aio_pika

from ..harness import take_one

ONE_STEP = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def test_a_queue_declared_with_x_max_priority_is_used_as_it_is(system, amqp_url, unique):
    # The worker's owner declared the queue first, with arguments the manager does not use.
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        owner = await connection.channel()
        queue = await owner.declare_queue(
            f"{unique}.only", durable=True, arguments={"x-max-priority": 10}
        )
        sys = await system(ONE_STEP)
        await sys.manager.process.wait_for_line(rf"queue '{unique}\.only' exists with other")
        replies = await sys.reply_queue()
        job_id = str(uuid.uuid4())
        trigger = aio_pika.Message(
            b"{}",
            headers={"workflow": "one", "x-priority": 7},
            correlation_id=job_id,
            reply_to=replies.name,
        )
        await sys.channel.default_exchange.publish(trigger, sys.trigger_queue)
        request = await take_one(queue)
        assert request.priority == 7
        await sys.answer(request, json.dumps({"done": True}).encode())
        outcome = await sys.next_outcome(replies)
        assert (outcome.correlation_id, outcome.status) == (job_id, "completed")
        # The HTTP way in, on the same (still open) queue.
        response = await sys.http.post("/api/workflow/one?priority=3", json={})
        assert response.status_code == 200, response.text
        request = await take_one(queue)
        assert request.priority == 3
        assert (await sys.http.get(f"/api/job/{response.json()['id']}")).json()["priority"] == 3
        said = [line for line in sys.manager.process.lines if "exists with other" in line]
        assert len(said) == 1, said


async def test_a_bad_x_priority_header_is_rejected_naming_the_header(system):
    sys = await system(ONE_STEP)
    replies = await sys.reply_queue()
    trigger = aio_pika.Message(
        b"{}", headers={"workflow": "one", "x-priority": 12}, reply_to=replies.name
    )
    await sys.channel.default_exchange.publish(trigger, sys.trigger_queue)
    outcome = await sys.next_outcome(replies)
    assert outcome.status == "rejected"
    assert "'x-priority' must be an integer from 0 to 9" in outcome.body["error"]
