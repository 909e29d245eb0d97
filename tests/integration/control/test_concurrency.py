"""Workflow concurrency limits on a real manager: per-key limits, priorities, and kill -9."""

from __future__ import annotations

import asyncio
import signal

from ..harness import take_one
from .journal_reads import most_at_once

WORKFLOWS = """
workflows:
  - name: per-account
    concurrency: {limit: 2, key: account}
    steps:
      - {name: work, queue: "{p}.work"}
  - name: one-at-a-time
    concurrency: {limit: 1}
    steps:
      - {name: solo, queue: "{p}.solo"}
"""


async def _submit(sys, workflow: str, payload: dict, priority: int = 0) -> str:
    response = await sys.http.post(f"/api/workflow/{workflow}?priority={priority}", json=payload)
    assert response.status_code == 200, response.text
    return response.json()["id"]


async def _status(sys, job_id: str) -> str:
    return (await sys.http.get(f"/api/job/{job_id}")).json()["status"]


async def _wait_status(sys, job_id: str, status: str, timeout_s: float = 20) -> None:
    async with asyncio.timeout(timeout_s):
        while await _status(sys, job_id) != status:
            await asyncio.sleep(0.05)  # polling the API with a deadline


def _job_of(request) -> str:
    return request.correlation_id.partition(":")[0]


async def test_at_most_two_jobs_run_per_account_and_all_complete(system):
    sys = await system(WORKFLOWS)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.work", durable=True)
    accounts = {}
    for i in range(10):
        account = "ab"[i % 2]
        accounts[await _submit(sys, "per-account", {"account": account, "i": i})] = account
    held = [await take_one(queue) for _ in range(4)]  # two per account can run
    assert sorted(accounts[_job_of(r)] for r in held) == ["a", "a", "b", "b"]
    queued = [j for j in accounts if await _status(sys, j) == "queued"]
    assert len(queued) == 6
    detail = (await sys.http.get(f"/api/job/{queued[0]}/steps")).json()
    assert detail["status"] == "queued" and detail["queued_at"]
    answered = 0
    while held:
        request = held.pop(0)
        await sys.answer(request, b"{}")
        answered += 1
        if answered <= 6:
            held.append(await take_one(queue))  # each end lets one of its account start
    for job_id in accounts:
        await _wait_status(sys, job_id, "completed")
    most = most_at_once(sys.db, "started", "finished", lambda _, p: p.get("account"))
    assert most == {"a": 2, "b": 2}
    metrics = (await sys.http.get("/metrics")).text
    assert 'workflow_manager_jobs_queued{workflow="per-account"} 0.0' in metrics


async def test_a_later_high_priority_job_starts_before_earlier_low_ones(system):
    sys = await system(WORKFLOWS)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.solo", durable=True)
    first = await _submit(sys, "one-at-a-time", {})
    request = await take_one(queue)
    low = [await _submit(sys, "one-at-a-time", {"n": n}) for n in range(2)]
    high = await _submit(sys, "one-at-a-time", {}, priority=9)
    assert [await _status(sys, j) for j in (*low, high)] == ["queued"] * 3
    order = [_job_of(request)]
    for _ in range(3):
        await sys.answer(request, b"{}")
        request = await take_one(queue)
        order.append(_job_of(request))
    await sys.answer(request, b"{}")
    assert order == [first, high, *low]


async def test_a_queued_job_survives_kill_9_and_keeps_its_place(system):
    sys = await system(WORKFLOWS)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.solo", durable=True)
    first = await _submit(sys, "one-at-a-time", {})
    request = await take_one(queue)
    older = await _submit(sys, "one-at-a-time", {"n": 1})
    newer = await _submit(sys, "one-at-a-time", {"n": 2})
    assert await sys.restart(signal.SIGKILL) == -9
    assert [await _status(sys, j) for j in (first, older, newer)] == ["running", "queued", "queued"]
    order = []
    for _ in range(2):
        await sys.answer(request, b"{}")
        request = await take_one(queue)
        order.append(_job_of(request))
    await sys.answer(request, b"{}")
    assert order == [older, newer]
    for job_id in (first, older, newer):
        await _wait_status(sys, job_id, "completed")


async def test_a_queued_job_can_be_cancelled(system):
    sys = await system(WORKFLOWS)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.solo", durable=True)
    await _submit(sys, "one-at-a-time", {})
    request = await take_one(queue)
    doomed = await _submit(sys, "one-at-a-time", {"n": 1})
    after = await _submit(sys, "one-at-a-time", {"n": 2})
    response = await sys.http.delete(f"/api/job/{doomed}")
    assert response.status_code == 200, response.text
    assert await _status(sys, doomed) == "cancelled"
    await sys.answer(request, b"{}")
    assert _job_of(await take_one(queue)) == after
