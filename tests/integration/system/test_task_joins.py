"""Join policies of a task step on a real manager and pyworker: `min_success` completes the
step once enough children succeeded and cancels the rest (across a manager restart), `first`
takes the first children to succeed and never starts the others."""

from __future__ import annotations

import json
import uuid

JOINED = """
workflows:
  - name: quorum
    steps:
      - {name: fan, task: t, join: {min_success: 2}}
      - {name: after, depends: [fan], queue: "{p}.after"}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - {name: leaf, queue: "{p}.leaf"}
  - name: race
    steps:
      - {name: fan, task: sq, join: {first: 1}}
    tasks:
      - name: sq
        itemListKey: items
        max_in_flight: 1
        steps:
          - {name: square, queue: "{p}.square"}
"""


async def test_min_success_completes_cancels_the_rest_and_survives_a_restart(system):
    sys_ = await system(JOINED, step_queues=["after"], log_level="debug")
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("quorum", {"items": [10, 11, 12, 13]}, job_id, outcomes.name)
    # The test plays the children's worker, so that two of them are still out when it ends.
    requests = [await sys_.take("leaf") for _ in range(4)]
    job = await sys_.found(f"/api/job/{job_id}")
    (fan,) = job["running"]
    assert (fan["tasks_needed"], fan["tasks_done"], fan["tasks_total"]) == (2, 0, 4)
    page = (await sys_.http.get(f"/api/job/{job_id}/steps")).json()
    children = next(s for s in page["steps"] if s["name"] == "fan")["children"]
    assert (children["needed"], children["running"], children["total"]) == (2, 4, 4)
    index = {child: i for i, child in enumerate(fan["tasks"])}
    by_index = sorted(requests, key=lambda r: index[r.correlation_id.split(":")[0]])

    await sys_.answer(by_index[3], json.dumps({"item": "r3"}).encode())
    await sys_.until(f"/api/job/{job_id}", lambda b: b["running"][0]["tasks_done"] == 1)
    await sys_.restart()  # mid-join: the journal brings the first success back
    await sys_.answer(by_index[0], json.dumps({"item": "r0"}).encode())

    outcome = await sys_.next_outcome(outcomes)
    assert outcome.status == "completed", outcome.body
    assert outcome.body["items"] == ["r0", None, None, "r3"]
    assert outcome.body["join"] == {
        "needed": 2,
        "succeeded": [0, 3],
        "failed": [],
        "unfinished": [1, 2],
    }
    for late in by_index[1:3]:
        child = (await sys_.http.get(f"/api/job/{late.correlation_id.split(':')[0]}")).json()
        assert child["status"] == "cancelled"
    # A late reply from a cancelled child is dropped; the job's result stays as it was.
    await sys_.answer(by_index[1], json.dumps({"item": "late"}).encode())
    await sys_.manager.process.wait_for_line(r"ignored .*:leaf: (no job|job .* already cancelled)")
    job = (await sys_.http.get(f"/api/job/{job_id}")).json()
    assert job["status"] == "completed"


async def test_first_takes_the_first_success_and_starts_no_more(system):
    sys_ = await system(JOINED, step_queues=["square"])
    outcome = await sys_.run("race", {"items": [2, 3, 4]})
    assert outcome.status == "completed", outcome.body
    assert outcome.body["items"] == [4, None, None]
    assert outcome.body["join"]["unfinished"] == [1, 2]
    assert outcome.body["squared_by"] == "square"
