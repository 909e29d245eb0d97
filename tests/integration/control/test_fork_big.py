"""Forking a job of 10,000 children, 10 of them failed, from its task step, on a real manager
and worker: the fork sends exactly the 10 failed children's requests, and completes with every
element's result in element order. (How soon: `python -m bench --only fork` measures it.)"""

from __future__ import annotations

import json
import uuid

from .forkworkers import CHILDREN, FAILING

WORKFLOWS = """
workflows:
  - name: wide
    steps:
      - {name: split, queue: "{p}.split"}
      - {name: fan, task: each, depends: [split]}
      - {name: total, queue: "{p}.total", depends: [fan]}
    tasks:
      - name: each
        itemListKey: items
        max_failed_items: 10
        steps:
          - {name: leaf, queue: "{p}.leaf"}
"""
WORKER = "tests/integration/control/forkworkers.py:worker"


async def _empty(sys_, queue: str) -> bool:
    found = await sys_.channel.declare_queue(f"{sys_.prefix}.{queue}", durable=True)
    return await found.get(fail=False) is None


async def test_a_fork_of_10000_children_sends_only_the_10_failed_ones(system):
    sys_ = await system(WORKFLOWS, step_queues=["split", "leaf", "total"], worker=WORKER)
    source = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("wide", {"n": CHILDREN}, source, outcomes.name)
    outcome = await sys_.next_outcome(outcomes, timeout_s=90)
    assert outcome.status == "completed", outcome.body
    assert outcome.body == {"done": CHILDREN - len(FAILING)}
    page = (await sys_.http.get(f"/api/job/{source}/steps")).json()
    failed = page["steps"][1]["output"]["failed_items"]
    assert [entry["index"] for entry in failed] == sorted(FAILING)

    # From here the test is the worker: every request the fork sends is taken and counted.
    assert await sys_.workers[0].stop() == 0
    response = await sys_.http.post(f"/api/job/{source}/fork", json={"from": "fan"})
    assert response.status_code == 201, response.text
    fork = response.json()["id"]

    requests = [await sys_.take("leaf", timeout_s=30) for _ in FAILING]
    items = []
    for request in requests:
        child, step = request.correlation_id.split(":")
        assert step == "leaf"
        listed = (await sys_.http.get(f"/api/job/{child}")).json()
        assert listed["parent"] == fork, listed
        items.append(json.loads(request.body)["item"])
    assert sorted(items) == sorted(FAILING)
    for request, item in zip(requests, items, strict=True):
        await sys_.answer(request, json.dumps({"item": item}).encode())

    total = await sys_.take("total", timeout_s=30)
    assert total.correlation_id == f"{fork}:total"
    assert json.loads(total.body)["items"] == list(range(CHILDREN))  # in element order
    await sys_.answer(total, json.dumps({"done": CHILDREN}).encode())
    page = await sys_.until(f"/api/job/{fork}/steps", lambda b: b["status"] == "completed")
    assert page["result"] == {"done": CHILDREN}
    assert page["forked_from"]["children_reused"] == CHILDREN - len(FAILING)
    assert page["forked_from"]["reused"] == ["split"]
    assert page["steps"][1]["children"]["completed"] == CHILDREN
    # Exactly ten: nothing more came for the children, and the kept split did not run again.
    assert await _empty(sys_, "leaf") and await _empty(sys_, "split")
