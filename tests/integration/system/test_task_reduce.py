"""`reduce` on a task step, on a real manager and pyworker: the children's results are folded
by a reducer in batches, and a manager killed (-9) while a reduction is in flight loses no
batch and reduces none twice: every child is counted exactly once in the final accumulator."""

from __future__ import annotations

import json
import signal
import uuid
from typing import Any

REDUCED = """
workflows:
  - name: tally
    steps:
      - name: fan
        task: t
        reduce: {step: total, queue: "{p}.total", batch: 3, initial: {sum: 0, count: 0}}
      - {name: after, depends: [fan], queue: "{p}.after"}
    tasks:
      - name: t
        itemListKey: items
        max_in_flight: 4
        steps:
          - {name: square, queue: "{p}.square"}
"""
ITEMS = list(range(1, 11))


def _reduced(request: Any) -> bytes:
    """What a summing reducer answers: the sum of the squares, how many, and which."""
    body = json.loads(request.body)
    acc, results = body["accumulator"], body["results"]
    return json.dumps(
        {
            "sum": acc["sum"] + sum(r["item"] for r in results),
            "count": acc["count"] + len(results),
            "seen": [*acc.get("seen", []), *(r["item"] for r in results)],
        }
    ).encode()


async def test_a_kill_during_a_reduction_loses_no_batch_and_reduces_none_twice(system):
    sys_ = await system(REDUCED, step_queues=["square", "after"])
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("tally", {"items": ITEMS}, job_id, outcomes.name)

    # The test plays the reducer. The first batch is taken and held: a reduction in flight.
    first = await sys_.take("total")
    assert len(json.loads(first.body)["results"]) == 3
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    attempt = (first.headers or {})["x-attempt"]
    await sys_.answer(first, _reduced(first), **{"x-attempt": attempt})

    # Then every request is answered (a copy of the first, sent again after the restart,
    # too: its reply must not count twice), until the job ends.
    answered, last = 1, False
    while not last:
        request = await sys_.take("total")
        await sys_.answer(request, _reduced(request), **{"x-attempt": request.headers["x-attempt"]})
        answered += 1
        body = json.loads(request.body)
        last = body["accumulator"]["count"] + len(body["results"]) == len(ITEMS)

    outcome = await sys_.next_outcome(outcomes)
    assert outcome.status == "completed", outcome.body
    squares = [i * i for i in ITEMS]
    assert outcome.body["count"] == len(ITEMS)
    assert sorted(outcome.body["seen"]) == squares  # each child once
    assert outcome.body["sum"] == sum(squares)
    assert outcome.body["from"] == "after"  # the accumulator went on as the step's output
    assert answered >= 4  # ceil(10 / 3) batches, one at a time
