"""Step concurrency on a real manager: never more than N requests of a step at the worker."""

from __future__ import annotations

import asyncio
import sqlite3

from ..harness import take_one

WORKFLOWS = """
workflows:
  - name: gated
    steps:
      - {name: fetch, queue: "{p}.fetch", concurrency: 3}
"""


def _most_outstanding(db) -> int:
    """The most `fetch` requests out at once, from the journal (dispatched, then replied)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT kind FROM events WHERE step = 'fetch' AND kind IN ('dispatched', 'replied')"
            " ORDER BY seq"
        ).fetchall()
    out = most = 0
    for (kind,) in rows:
        out += 1 if kind == "dispatched" else -1
        most = max(most, out)
    return most


async def test_step_concurrency_3_with_50_jobs_keeps_3_requests_out(system):
    sys = await system(WORKFLOWS)
    queue = await sys.channel.declare_queue(f"{sys.prefix}.fetch", durable=True)
    jobs = []
    for i in range(50):
        response = await sys.http.post("/api/workflow/gated", json={"i": i})
        assert response.status_code == 200, response.text
        jobs.append(response.json()["id"])
    held = [await take_one(queue) for _ in range(3)]
    steps = (await sys.http.get(f"/api/job/{jobs[-1]}/steps")).json()["steps"]
    assert steps[0]["status"] == "queued"  # waits in the manager, not on the queue
    answered = 0
    while held:
        await sys.answer(held.pop(0), b"{}")
        answered += 1
        if answered + len(held) < len(jobs):
            held.append(await take_one(queue))  # each reply lets the next request out
    async with asyncio.timeout(20):
        while len((await sys.http.get("/api/workflow/gated")).json()["completed"]) < 50:
            await asyncio.sleep(0.05)  # polling the API with a deadline
    assert _most_outstanding(sys.db) == 3
