"""Whole workflows through a real manager and real workers: diamonds, nested tasks, failures."""

from __future__ import annotations

import sqlite3
import uuid

DIAMOND = """
workflows:
  - name: diamond
    steps:
      - {name: s4, depends: [s2, s3], queue: "{p}.s4"}
      - {name: s1, queue: "{p}.s1"}
      - {name: s2, depends: [s1], queue: "{p}.s2"}
      - {name: s3, depends: [s1], queue: "{p}.s3"}
"""

NESTED = """
workflows:
  - name: nested
    steps:
      - {name: fan, task: outer}
    tasks:
      - name: outer
        itemListKey: groups
        steps:
          - {name: prep, queue: "{p}.prep"}
          - {name: inner-fan, task: inner, depends: [prep]}
          - {name: pack, depends: [inner-fan], queue: "{p}.pack"}
      - name: inner
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
"""

FAILING = """
workflows:
  - name: failing
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: boom, depends: [first], queue: "{p}.boom"}
      - {name: after, depends: [boom], queue: "{p}.after"}
"""


async def test_diamond_merges_parents_first_listed_wins(system):
    sys = await system(DIAMOND, step_queues=["s1", "s2", "s3", "s4"])
    outcome = await sys.run("diamond", {"start": True})
    assert outcome.status == "completed"
    # s4 got s2's `path` (s2 is listed first in depends) merged with s3's flag.
    assert outcome.body["path"] == ["s1", "s2", "s4"]
    assert outcome.body["seen_s3"] is True
    assert outcome.body["from"] == "s4"
    assert outcome.body["start"] is True


async def test_nested_tasks_gather_in_element_order(system):
    sys = await system(NESTED, step_queues=["prep", "pack", "square"])
    job_id = str(uuid.uuid4())
    outcome = await sys.run("nested", {"groups": [[1, 2, 3], [], [4]], "tag": "x"}, job_id)
    assert outcome.status == "completed", outcome.body
    assert outcome.body["groups"] == [[1, 4, 9], [], [16]]
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    fan = next(e for e in job["completed"] if e["name"] == "fan")
    assert len(fan["tasks"]) == 3
    child = (await sys.http.get(f"/api/job/{fan['tasks'][0]}")).json()
    assert child["status"] == "completed"
    assert child["workflow"] == "nested"


async def test_worker_exception_fails_the_job_with_the_step_and_message(system):
    sys = await system(FAILING, step_queues=["first", "boom", "after"])
    job_id = str(uuid.uuid4())
    outcome = await sys.run("failing", {}, job_id)
    assert outcome.status == "failed"
    assert outcome.body["error"]["step"] == "boom"
    assert "boom in boom" in outcome.body["error"]["message"]
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    assert job["status"] == "failed"
    assert all(entry["name"] != "after" for entry in job["completed"] + job["running"])
    assert "__end__" not in [entry["name"] for entry in job["completed"]]


WINDOWED = """
workflows:
  - name: windowed
    steps:
      - {name: fan, task: each}
    tasks:
      - name: each
        itemListKey: items
        max_in_flight: 2
        steps:
          - {name: square, queue: "{p}.square"}
"""


async def test_a_task_runs_at_most_max_in_flight_children_at_once(system):
    sys = await system(WINDOWED, step_queues=["square"])
    job_id = str(uuid.uuid4())
    outcome = await sys.run("windowed", {"items": list(range(12))}, job_id)
    assert outcome.status == "completed", outcome.body
    assert outcome.body["items"] == [i * i for i in range(12)]
    # The journal's order: never more than two requests out without their replies. (The
    # outcome may go out while its commit is in flight: a clean stop writes everything.)
    await sys.restart()
    with sqlite3.connect(sys.db) as db:
        kinds = db.execute(
            "SELECT kind FROM events WHERE root_id = ? AND step = 'square'"
            " AND kind IN ('dispatched', 'replied') ORDER BY seq",
            (job_id,),
        ).fetchall()
    outstanding, most = 0, 0
    for (kind,) in kinds:
        outstanding += 1 if kind == "dispatched" else -1
        most = max(most, outstanding)
    assert len(kinds) == 24 and most == 2
