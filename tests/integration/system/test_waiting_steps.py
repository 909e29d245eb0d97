"""Waiting steps, end to end: completed by an HTTP signal, an AMQP signal on `<queue>.signals`
and an early signal; a timeout fails the job (on_error runs); a child job's waiting step; all
across a manager kill -9 while waiting."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid

import aio_pika

WORKFLOWS = """
workflows:
  - name: approve
    steps:
      - {name: fetch, queue: "{p}.fetch"}
      - {name: approval, wait: true, timeout: 600, depends: [fetch]}
      - {name: apply, queue: "{p}.apply", depends: [approval]}
  - name: hurry
    steps:
      - {name: approval, wait: true, timeout: 2}
    on_error:
      - {name: alert, queue: "{p}.alert"}
  - name: batch
    steps:
      - {name: each, task: per}
    tasks:
      - name: per
        itemListKey: items
        steps:
          - {name: ok, wait: true}
"""


async def _steps(sys_, job_id: str) -> dict:
    """The job page once the manager knows the job (triggers are asynchronous)."""
    return await sys_.found(f"/api/job/{job_id}/steps")


async def _status_of(sys_, job_id: str, step: str, wanted: str, deadline_s: float = 15.0) -> dict:
    """The step's view once it has status `wanted` (polling the API with a deadline)."""
    end = time.monotonic() + deadline_s
    while True:
        page = await _steps(sys_, job_id)
        view = next(s for s in page["steps"] if s["name"] == step)
        if view["status"] == wanted:
            return view
        assert time.monotonic() < end, f"{step} is {view['status']}, not {wanted}"
        await asyncio.sleep(0.05)


async def _start_approve(sys_) -> tuple[str, aio_pika.abc.AbstractQueue]:
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("approve", {"n": 1}, job_id, outcomes.name)
    return job_id, outcomes


async def _amqp_signal(sys_, correlation_id: str, body: bytes) -> None:
    message = aio_pika.Message(body, correlation_id=correlation_id)
    await sys_.channel.default_exchange.publish(message, f"{sys_.manager.queue}.signals")


async def _finish(sys_, outcomes, job_id: str, approval: dict) -> None:
    """The job goes on from the signal (apply gets its output) and completes."""
    apply = await sys_.take("apply")
    assert json.loads(apply.body) == approval
    await sys_.answer(apply, b'{"applied": true}')
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.correlation_id, outcome.status) == (job_id, "completed")


async def test_an_http_signal_completes_a_waiting_step_across_a_kill(system):
    sys_ = await system(WORKFLOWS)
    job_id, outcomes = await _start_approve(sys_)
    await sys_.answer(await sys_.take("fetch"), b'{"doc": 1}')
    waiting = await _status_of(sys_, job_id, "approval", "waiting")
    assert waiting["wait"] is True and "waiting_since" in waiting
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    await _status_of(sys_, job_id, "approval", "waiting")  # still waiting after the restart
    response = await sys_.http.post(f"/api/job/{job_id}/signal/approval", json={"ok": True})
    assert response.json() == {"job": job_id, "step": "approval", "status": "completed"}
    await _finish(sys_, outcomes, job_id, {"ok": True})


async def test_an_amqp_signal_completes_a_waiting_step_after_a_kill_a_bad_one_is_dead_lettered(
    system,
):
    sys_ = await system(WORKFLOWS)
    job_id, outcomes = await _start_approve(sys_)
    await sys_.answer(await sys_.take("fetch"), b"{}")
    await _status_of(sys_, job_id, "approval", "waiting")
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    await _amqp_signal(sys_, f"{job_id}:approvl", b"{}")  # no such step
    await _amqp_signal(sys_, f"{job_id}:approval", b'{"by": "amqp"}')
    await _finish(sys_, outcomes, job_id, {"by": "amqp"})
    dead = await sys_.channel.declare_queue(f"{sys_.manager.queue}.dead", durable=True)
    letter = await dead.get(timeout=10)
    await letter.ack()
    assert letter.correlation_id == f"{job_id}:approvl"
    assert "has no step 'approvl'" in json.dumps(dict(letter.headers), default=str)


async def test_an_early_signal_is_kept_across_a_kill_and_completes_the_step(system):
    sys_ = await system(WORKFLOWS)
    job_id, outcomes = await _start_approve(sys_)
    fetch = await sys_.take("fetch")
    response = await sys_.http.post(f"/api/job/{job_id}/signal/approval", json={"early": 1})
    assert response.json()["status"] == "kept"
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    await sys_.answer(fetch, b"{}")
    await _finish(sys_, outcomes, job_id, {"early": 1})


async def test_the_timeout_of_a_waiting_step_fails_the_job_and_on_error_runs(system):
    sys_ = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("hurry", {}, job_id, outcomes.name)
    await _status_of(sys_, job_id, "approval", "waiting")
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    alert = await sys_.take("alert")
    assert json.loads(alert.body)["error"]["message"] == "no signal within 2s"
    await sys_.answer(alert, b"{}")
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.status, outcome.body["error"]["step"]) == ("failed", "approval")


async def test_a_child_jobs_waiting_step_takes_its_signal(system):
    sys_ = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("batch", {"items": ["a"]}, job_id, outcomes.name)
    page = await _steps(sys_, job_id)
    assert page["steps"][0]["name"] == "each"
    end = time.monotonic() + 15
    while True:
        children = (await sys_.http.get(f"/api/job/{job_id}/children")).json()["children"]
        if children:
            break
        assert time.monotonic() < end
        await asyncio.sleep(0.05)  # polling the API with a deadline
    child = children[0]["uuid"]
    await _status_of(sys_, child, "ok", "waiting")
    await _amqp_signal(sys_, f"{child}:ok", b'{"fine": true}')
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.status, outcome.body) == ("completed", {"fine": True, "items": [None]})
