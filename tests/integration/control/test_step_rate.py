"""Step rate limits on a real manager: never more than N requests of a step started in any
window, as the journal recorded them, across a kill -9 and a restart too. The test plays the
worker."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from datetime import datetime

from ..harness import take_one

WORKFLOWS = """
workflows:
  - name: rated
    steps:
      - {name: call, queue: "{p}.call", rate: {limit: LIMIT, per: PER}}
"""


def _dispatch_times(db) -> list[float]:
    """When each `call` request was sent, as the journal recorded it, oldest first."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT at FROM events WHERE step = 'call' AND kind = 'dispatched' ORDER BY at"
        ).fetchall()
    return [at for (at,) in rows]


def _most_in_a_window(times: list[float], per: float) -> int:
    """The most starts in any half-open window (t - per, t] ending at a start."""
    return max(sum(end - per < t <= end for t in times) for end in times)


def _workflows(limit: int, per: float) -> str:
    return WORKFLOWS.replace("LIMIT", str(limit)).replace("PER", str(per))


async def _answer_all(sys, queue, count: int) -> None:
    for _ in range(count):
        await sys.answer(await take_one(queue), b"{}")


async def test_a_rate_of_5_per_2s_spreads_20_jobs_and_never_sends_6_in_a_window(system):
    sys = await system(_workflows(5, 2))
    queue = await sys.channel.declare_queue(f"{sys.prefix}.call", durable=True)
    jobs = []
    for i in range(20):
        response = await sys.http.post("/api/workflow/rated", json={"i": i})
        assert response.status_code == 200, response.text
        jobs.append(response.json()["id"])
    steps = (await sys.http.get(f"/api/job/{jobs[-1]}/steps")).json()["steps"]
    assert steps[0]["status"] == "throttled"  # waits in the manager, not on the queue
    until = datetime.fromisoformat(steps[0]["throttled_until"].replace("Z", "+00:00"))
    assert until.timestamp() > _dispatch_times(sys.db)[0]
    await _answer_all(sys, queue, 20)
    async with asyncio.timeout(30):
        while len((await sys.http.get("/api/workflow/rated")).json()["completed"]) < 20:
            await asyncio.sleep(0.05)  # polling the API with a deadline
    times = _dispatch_times(sys.db)
    assert len(times) == 20
    assert _most_in_a_window(times, 2.0) == 5, str([round(t - times[0], 4) for t in times])
    assert times[-1] - times[0] >= 6.0  # 20 starts at 5 per 2 s need three more windows


async def test_the_window_outlives_a_kill_and_a_restart(system):
    sys = await system(_workflows(3, 8))
    queue = await sys.channel.declare_queue(f"{sys.prefix}.call", durable=True)
    first = []
    for i in range(3):
        first.append((await sys.http.post("/api/workflow/rated", json={"i": i})).json()["id"])
    await _answer_all(sys, queue, 3)
    for job in first:  # ended: replay alone would forget their starts
        await sys.until(f"/api/job/{job}", lambda body: body["status"] == "completed")
    assert await sys.restart(signal.SIGKILL) == -signal.SIGKILL
    late = (await sys.http.post("/api/workflow/rated", json={"i": 3})).json()["id"]
    steps = (await sys.http.get(f"/api/job/{late}/steps")).json()["steps"]
    assert steps[0]["status"] == "throttled", steps
    await _answer_all(sys, queue, 1)
    await sys.until(f"/api/job/{late}", lambda body: body["status"] == "completed")
    times = _dispatch_times(sys.db)
    assert len(times) == 4
    assert times[3] >= times[0] + 8.0
    assert _most_in_a_window(times, 8.0) == 3
