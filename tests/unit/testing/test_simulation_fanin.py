"""The testing API shows a join step's progress and a reduce step's batches as the manager's API
does, and a reference in a result stays a reference (nothing resolves it)."""

from __future__ import annotations

from typing import Any

from workflow_manager.config import parse_workflows
from workflow_manager.testing import Simulation

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
REF = {"$ref": f"wm://main/job/{DIGEST}", "sha256": DIGEST, "size": 100_000_000}

FLOWS = """
workflows:
  - name: joined
    steps:
      - name: ask
        task: per_item
        join: {first: 2}
    tasks:
      - name: per_item
        itemListKey: items
        max_in_flight: 1
        steps:
          - name: work
  - name: summed
    steps:
      - name: fan
        task: per_sum
        reduce: {step: total, batch: 2, initial: {sum: 0}}
    tasks:
      - name: per_sum
        itemListKey: items
        steps:
          - name: add
"""


async def test_a_join_step_shows_what_it_needs_and_what_met_it():
    sim = Simulation(parse_workflows(FLOWS))
    sim.serve("work", lambda data: {"item": REF if data["item"] == 1 else data["item"]})
    job_id = await sim.start("joined", {"items": [1, 2, 3, 4]})
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.status == "completed"
    ask = job.step("ask")
    assert ask.join == {
        "policy": "first 2", "needed": 2, "succeeded": 2, "failed": 0, "left": 2,
        "then": "cancel", "met": True,
    }  # fmt: skip
    assert ask.reduce is None
    # The child's reference is gathered as it is: size and digest, never a value.
    assert job.result is not None and job.result["items"][0] == REF


async def test_a_reduce_step_shows_its_batches_and_children_reduced():
    sim = Simulation(parse_workflows(FLOWS))
    sim.serve("add", lambda data: {"v": data["item"]})

    def total(data: dict[str, Any]) -> dict[str, Any]:
        return {"sum": data["accumulator"]["sum"] + sum(r["v"] for r in data["results"])}

    sim.serve("total", total)
    job_id = await sim.start("summed", {"items": [1, 2, 3, 4, 5]})
    await sim.run_until_idle()
    job = sim.job(job_id)
    assert job.result == {"sum": 15}
    assert job.step("fan").reduce == {"step": "total", "batch": 2, "batches": 3, "reduced": 5}
    assert job.step("fan").join is None
    assert job.step("fan").status == "completed"
