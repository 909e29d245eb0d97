"""Forks and bulk actions on the PostgreSQL journal: a fork of a task step whose source left
memory keeps its completed children (read from the journal's rows), and a bulk action cut by
a kill -9 goes on after the restart, each job once."""

from __future__ import annotations

import json
import signal
import uuid

from tests.integration.control.test_bulk import _start
from tests.pgdatabase import fresh_database

WORKFLOWS = """
workflows:
  - name: spread
    steps:
      - {name: fan, task: each}
    tasks:
      - name: each
        itemListKey: items
        max_failed_items: 1
        steps:
          - {name: square, queue: "{p}.square"}
  - name: hold
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def test_a_fork_and_a_bulk_on_postgresql(system):
    with fresh_database() as url:
        sys_ = await system(WORKFLOWS, db=url)
        source = str(uuid.uuid4())
        outcomes = await sys_.reply_queue()
        await sys_.trigger("spread", {"items": [1, 2, 3]}, source, outcomes.name)
        for _ in range(3):
            request = await sys_.take("square")
            item = json.loads(request.body)["item"]
            if item == 2:
                await sys_.answer(request, b"", **{"x-error": "no"})
            else:
                await sys_.answer(request, json.dumps({"item": item * 10}).encode())
        assert (await sys_.next_outcome(outcomes)).status == "completed"
        assert await sys_.restart() == 0

        response = await sys_.http.post(f"/api/job/{source}/fork", json={"from": "fan"})
        assert response.status_code == 201, response.text
        fork = response.json()["id"]
        again = await sys_.take("square")
        assert json.loads(again.body)["item"] == 2  # only the failed child runs again
        await sys_.answer(again, b'{"item": 20}')
        done = await sys_.until(f"/api/job/{fork}", lambda b: b["status"] == "completed")
        assert done["result"]["items"] == [10, 20, 30]

        jobs = await _start(sys_, "hold", 1200)
        response = await sys_.http.post(
            "/api/jobs/bulk", json={"action": "cancel", "filter": {"workflow": "hold"}}
        )
        assert response.status_code == 202, response.text
        path = f"/api/bulk/{response.json()['id']}"
        await sys_.until(path, lambda b: b["done"] > 0)
        assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
        finished = await sys_.until(path, lambda b: b["status"] == "finished")
        assert (finished["changed"], finished["refused"]) == (len(jobs), 0)
        statuses = {
            (await sys_.http.get(f"/api/job/{job}")).json()["status"] for job in jobs[::100]
        }
        assert statuses == {"cancelled"}
        await sys_.http.aclose()
        await sys_.manager.process.stop()
