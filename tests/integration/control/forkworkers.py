"""Workers for test_fork_big: a fan-out of `n` elements whose children fail at fixed elements.

Served queues come from STEP_QUEUES; what a step does depends on its name: `split` returns
`{"items": [0, ..., n-1]}`, `leaf` (the child step) answers `{"item": i}` or fails when `i` is
in `FAILING`, and `total` counts the elements that have a result.
"""

from __future__ import annotations

import os
from typing import Any

from pyworker import StepContext, Worker

__all__ = ["CHILDREN", "FAILING", "worker"]

CHILDREN = 10_000
# Ten elements spread over the list, so failures come early, in the middle and late.
FAILING = frozenset(range(CHILDREN // 20, CHILDREN, CHILDREN // 10))

# A wide prefetch: 10,000 children go through one process, at most 1,000 in flight at once.
worker = Worker(prefetch=200)


def handle(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    """Dispatch on the step name."""
    if ctx.step == "split":
        return {"items": list(range(int(data.get("n", CHILDREN))))}
    if ctx.step == "leaf":
        if data["item"] in FAILING:
            raise ValueError(f"element {data['item']} fails")
        return {"item": data["item"]}
    if ctx.step == "total":
        return {"done": sum(item is not None for item in data["items"])}
    raise ValueError(f"forkworkers serves split, leaf and total, not {ctx.step!r}")


for queue in filter(None, os.environ.get("STEP_QUEUES", "").split(",")):
    worker.step(queue)(handle)
