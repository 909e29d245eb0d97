"""A workflow's rate on a real manager: never more than N jobs started in any window, as the
journal recorded their starts, none dropped, across a kill -9 and a restart too. The test plays
the worker."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from datetime import datetime

from ..harness import take_one

WORKFLOWS = """
workflows:
  - name: rated
    rate: {limit: LIMIT, per: PER}
    steps:
      - {name: call, queue: "{p}.call"}
"""


def _start_times(db) -> list[float]:
    """When each top-level job first started, as the journal recorded it, oldest first."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT MIN(at) FROM events WHERE kind = 'started' GROUP BY job_id ORDER BY 1"
        ).fetchall()
    return [at for (at,) in rows]


def _most_in_a_window(times: list[float], per: float) -> int:
    """The most starts in any half-open window (t - per, t] ending at a start."""
    return max(sum(end - per < t <= end for t in times) for end in times)


def _workflows(limit: int, per: float) -> str:
    return WORKFLOWS.replace("LIMIT", str(limit)).replace("PER", str(per))


async def _answer(sys, queue, count: int) -> None:
    for _ in range(count):
        await sys.answer(await take_one(queue), b"{}")


async def test_a_rate_of_3_per_2s_starts_10_jobs_in_turn_and_drops_none(system):
    sys = await system(_workflows(3, 2))
    queue = await sys.channel.declare_queue(f"{sys.prefix}.call", durable=True)
    jobs = []
    for i in range(10):
        response = await sys.http.post("/api/workflow/rated", json={"i": i})
        assert response.status_code == 200, response.text
        jobs.append(response.json()["id"])
    last = (await sys.http.get(f"/api/job/{jobs[-1]}")).json()
    assert last["status"] == "queued", last  # waits in the manager for its turn
    waiting = last["waiting_for"]
    assert (waiting["kind"], waiting["of"]) == ("rate", 3), waiting
    until = datetime.fromisoformat(waiting["until"].replace("Z", "+00:00")).timestamp()
    assert until > _start_times(sys.db)[0]
    await _answer(sys, queue, 10)
    async with asyncio.timeout(30):
        while len((await sys.http.get("/api/workflow/rated")).json()["completed"]) < 10:
            await asyncio.sleep(0.05)  # polling the API with a deadline
    times = _start_times(sys.db)
    assert len(times) == 10
    assert _most_in_a_window(times, 2.0) == 3, str([round(t - times[0], 4) for t in times])
    assert times[-1] - times[0] >= 6.0  # 10 starts at 3 per 2 s need three more windows


async def test_the_window_outlives_a_kill_and_a_restart(system):
    sys = await system(_workflows(2, 8))
    queue = await sys.channel.declare_queue(f"{sys.prefix}.call", durable=True)
    first = []
    for i in range(2):
        first.append((await sys.http.post("/api/workflow/rated", json={"i": i})).json()["id"])
    await _answer(sys, queue, 2)
    for job in first:  # ended: replay alone would forget their starts
        await sys.until(f"/api/job/{job}", lambda body: body["status"] == "completed")
    assert await sys.restart(signal.SIGKILL) == -signal.SIGKILL
    late = (await sys.http.post("/api/workflow/rated", json={"i": 2})).json()["id"]
    body = (await sys.http.get(f"/api/job/{late}")).json()
    assert body["status"] == "queued" and body["waiting_for"]["kind"] == "rate", body
    await _answer(sys, queue, 1)
    await sys.until(f"/api/job/{late}", lambda body: body["status"] == "completed")
    times = _start_times(sys.db)
    assert len(times) == 3
    assert times[2] >= times[0] + 8.0
    assert _most_in_a_window(times, 8.0) == 2
