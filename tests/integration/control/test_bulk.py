"""Bulk actions on a real manager: a filter is evaluated once and exactly the jobs it matched
are acted on (a job that starts matching later is not), each action (cancel, retry, pause,
resume, fork) does to each job what it would alone, and a kill -9 in the middle of a bulk
loses nothing and does no job twice."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import time
import uuid

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: second, queue: "{p}.second", depends: [first]}
  - name: other
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def _start(sys_, workflow: str, count: int, meta: dict | None = None) -> list[str]:
    """Start `count` jobs over HTTP, 20 requests at a time; each
    waits for its first step's reply."""
    params = {"meta": json.dumps(meta)} if meta else {}

    async def one() -> str:
        response = await sys_.http.post(f"/api/workflow/{workflow}", json={"n": 1}, params=params)
        assert response.status_code == 200, response.text
        return response.json()["id"]

    ids: list[str] = []
    for first in range(0, count, 20):
        ids += await asyncio.gather(*(one() for _ in range(min(20, count - first))))
    return ids


async def _trigger(sys_, workflow: str, count: int) -> list[str]:
    """Start `count` jobs as AMQP triggers (many times faster than as many POSTs); returns
    their ids once the journal holds every one, running."""
    ids = [str(uuid.uuid4()) for _ in range(count)]
    await asyncio.gather(*(sys_.trigger(workflow, {"n": 1}, job_id) for job_id in ids))
    end = time.monotonic() + 60
    while True:
        with sqlite3.connect(sys_.db) as db:
            running = db.execute(
                "SELECT count(*) FROM jobs WHERE workflow = ? AND status = 'running'", (workflow,)
            ).fetchone()[0]
        if running >= count:
            return ids
        assert time.monotonic() < end, f"{running} of {count} jobs running"
        await asyncio.sleep(0.05)  # polling the journal with a deadline


async def _bulk(sys_, body: dict) -> dict:
    response = await sys_.http.post("/api/jobs/bulk", json=body)
    assert response.status_code == 202, response.text
    bulk_id = response.json()["id"]
    return await sys_.until(f"/api/bulk/{bulk_id}", lambda b: b["status"] == "finished")


async def _status(sys_, job_id: str) -> str:
    return (await sys_.http.get(f"/api/job/{job_id}")).json()["status"]


async def test_a_bulk_cancel_acts_on_exactly_the_jobs_its_filter_matched(system):
    sys_ = await system(WORKFLOWS)
    tenant_a = await _start(sys_, "chain", 6, {"tenant": "a"})
    tenant_b = await _start(sys_, "chain", 3, {"tenant": "b"})
    others = await _start(sys_, "other", 2, {"tenant": "a"})
    body = {"action": "cancel", "filter": {"workflow": "chain", "meta": {"tenant": "a"}}}

    dry = await sys_.http.post("/api/jobs/bulk", json={**body, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert "id" not in dry.json() and dry.json()["matched"] == 6
    assert sorted(dry.json()["sample"]) == sorted(tenant_a)

    response = await sys_.http.post("/api/jobs/bulk", json=body)
    assert response.status_code == 202, response.text
    later = await _start(sys_, "chain", 1, {"tenant": "a"})  # matches only after the fact
    path = f"/api/bulk/{response.json()['id']}"
    done = await sys_.until(path, lambda b: b["status"] == "finished")
    assert (done["total"], done["done"], done["changed"], done["refused"]) == (6, 6, 6, 0)
    assert done["filter"] == {"workflow": "chain", "meta": {"tenant": "a"}}
    assert {await _status(sys_, job) for job in tenant_a} == {"cancelled"}
    assert {await _status(sys_, job) for job in tenant_b + others + later} == {"running"}

    # Cancelling the same again: nothing left to change, each refusal said why.
    again = await _bulk(sys_, {**body, "filter": {**body["filter"], "status": "cancelled"}})
    assert (again["total"], again["changed"], again["refused"]) == (6, 0, 6)
    assert "already cancelled" in again["errors"][0]["reason"]
    assert (await sys_.http.get(f"/api/bulk/{uuid.uuid4()}")).status_code == 404


async def test_bulk_pause_resume_retry_and_fork(system):
    sys_ = await system(WORKFLOWS)
    jobs = await _start(sys_, "chain", 4)
    firsts = [await sys_.take("first") for _ in jobs]
    paused = await _bulk(sys_, {"action": "pause", "filter": {"workflow": "chain"}})
    assert paused["changed"] == 4
    for request in firsts:  # in flight when paused: answered, kept; `second` is held
        await sys_.answer(request, b'{"n": 2}')
    for job in jobs:
        path = f"/api/job/{job}/steps"
        await sys_.until(path, lambda b: b["steps"][0]["status"] == "completed")
        assert (await _status(sys_, job)) == "paused"
    resumed = await _bulk(sys_, {"action": "resume", "filter": {"status": "paused"}})
    assert resumed["changed"] == 4
    seconds = [await sys_.take("second") for _ in jobs]
    for request in seconds:
        await sys_.answer(request, b"", **{"x-error": "broken"})
    for job in jobs:
        await sys_.until(f"/api/job/{job}", lambda b: b["status"] == "failed")
    assert await sys_.restart() == 0  # the failed jobs leave memory: retried from the journal

    retried = await _bulk(sys_, {"action": "retry", "filter": {"status": "failed"}})
    assert (retried["changed"], retried["refused"]) == (4, 0)
    again = sorted([(await sys_.take("second")).correlation_id for _ in jobs])
    assert again == sorted(f"{job}:second" for job in jobs)

    forked = await _bulk(sys_, {
        "action": "fork", "filter": {"workflow": "chain", "status": "running"},
        "fork": {"from": "second", "input": {"n": 9}},
    })  # fmt: skip
    assert forked["changed"] == 0 and forked["refused"] == 4  # they run: no fork
    assert "only a completed, failed or cancelled job" in forked["errors"][0]["reason"]


async def test_a_bulk_cut_by_a_kill_goes_on_after_the_restart_and_does_no_job_twice(system):
    sys_ = await system(WORKFLOWS)
    jobs = await _trigger(sys_, "other", 2000)
    response = await sys_.http.post(
        "/api/jobs/bulk", json={"action": "cancel", "filter": {"workflow": "other"}}
    )
    assert response.status_code == 202, response.text
    bulk_id = response.json()["id"]
    path = f"/api/bulk/{bulk_id}"
    middle = await sys_.until(path, lambda b: b["done"] > 0)
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    done = await sys_.until(path, lambda b: b["status"] == "finished")
    assert (done["total"], done["done"], done["changed"], done["refused"]) == (2000, 2000, 2000, 0)
    print(f"killed at {middle['done']} of 2000")  # how far it was, for the log

    # Memory is ahead of the journal by the last slice's commit: read once it is written.
    end = time.monotonic() + 30
    while True:
        with sqlite3.connect(sys_.db) as db:
            cancels = db.execute(
                "SELECT job_id, count(*) FROM events WHERE kind = 'cancel' GROUP BY job_id"
            ).fetchall()
            statuses = dict(db.execute("SELECT id, status FROM jobs WHERE parent_id IS NULL"))
        if len(cancels) >= len(jobs) or time.monotonic() > end:
            break
        await asyncio.sleep(0.05)  # polling the journal with a deadline
    assert sorted(job for job, _ in cancels) == sorted(jobs)
    assert {count for _, count in cancels} == {1}  # no job twice
    assert {statuses[job] for job in jobs} == {"cancelled"}
