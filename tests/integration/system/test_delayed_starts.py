"""Delayed starts, end to end: `x-delay` and `?delay=` make a scheduled job that starts on time,
once, across a manager kill -9; a cancelled scheduled job never starts."""

from __future__ import annotations

import json
import signal
import time
import uuid

import aio_pika

WORKFLOWS = """
workflows:
  - name: later
    steps:
      - {name: hand, queue: "{p}.hand"}
"""


async def _job(sys_, job_id: str) -> dict:
    """GET /api/job/{id} once the manager knows the job (the trigger is asynchronous)."""
    return await sys_.found(f"/api/job/{job_id}")


async def _publish(sys_, job_id: str, reply_to: str, headers: dict) -> None:
    message = aio_pika.Message(
        b"{}", headers={"workflow": "later", **headers}, correlation_id=job_id, reply_to=reply_to
    )
    await sys_.channel.default_exchange.publish(message, sys_.trigger_queue)


async def test_an_x_delay_job_is_scheduled_and_starts_once_on_time_across_a_kill(system):
    sys_ = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    sent_at = time.time()
    await _publish(sys_, job_id, outcomes.name, {"x-delay": 2})
    job = await _job(sys_, job_id)
    assert job["status"] == "scheduled" and "start_at" in job
    assert job["running"] == []
    # Killed while it waits: the journal holds it, and its start timer comes back.
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    # Still scheduled, unless the restart itself outlasted the delay (a loaded machine): then
    # its start timer came back already due and the job started at once.
    status = (await _job(sys_, job_id))["status"]
    assert status == "scheduled" or (status == "running" and time.time() - sent_at >= 2.0)
    request = await sys_.take("hand")
    assert time.time() - sent_at >= 2.0  # no earlier than asked
    assert request.correlation_id == f"{job_id}:hand"
    await sys_.answer(request, b'{"done": true}')
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.correlation_id, outcome.status) == (job_id, "completed")
    steps = (await sys_.http.get(f"/api/job/{job_id}/steps")).json()
    (hand,) = steps["steps"]
    assert hand["attempts"] == 1 and len(hand["history"]) == 1  # it started once


async def test_a_cancelled_scheduled_job_never_starts(system):
    sys_ = await system(WORKFLOWS)
    doomed, kept = str(uuid.uuid4()), str(uuid.uuid4())
    response = await sys_.http.post(f"/api/workflow/later?id={doomed}&delay=1", json={})
    assert response.status_code == 200, response.text
    assert (await _job(sys_, doomed))["status"] == "scheduled"
    cancelled = await sys_.http.delete(f"/api/job/{doomed}")
    assert cancelled.json()["status"] == "cancelled"
    # A second job due later than the cancelled one: once it has started, the first would have.
    response = await sys_.http.post(f"/api/workflow/later?id={kept}&delay=1.5", json={})
    assert response.status_code == 200, response.text
    request = await sys_.take("hand")
    assert request.correlation_id == f"{kept}:hand"
    queue = await sys_.channel.declare_queue(f"{sys_.prefix}.hand", durable=True)
    assert await queue.get(fail=False) is None  # nothing for the cancelled job
    assert (await _job(sys_, doomed))["status"] == "cancelled"


async def test_a_bad_x_delay_is_dead_lettered_and_rejected_naming_the_header(system):
    sys_ = await system(WORKFLOWS)
    outcomes = await sys_.reply_queue()
    await _publish(sys_, str(uuid.uuid4()), outcomes.name, {"x-delay": "soon"})
    outcome = await sys_.next_outcome(outcomes)
    assert outcome.status == "rejected"
    assert "header 'x-delay' must be a number of seconds" in outcome.body["error"]
    dead = await sys_.channel.declare_queue(f"{sys_.manager.queue}.dead", durable=True)
    message = await dead.get(timeout=10)
    await message.ack()
    assert "x-delay" in json.dumps(dict(message.headers), default=str)
