"""No-op workers shaped like the word-counts example, for `pyworker bench/workers.py:worker`.

Every step does the least work that still gives a checkable result, so the benchmark measures
the manager and the broker, not the steps. Run with `--queue-prefix` (or $QUEUE_PREFIX) so each
benchmark run has its own queues.
"""

from __future__ import annotations

from typing import Any

from pyworker import Worker

__all__ = ["worker", "LINEAR_STEPS"]

LINEAR_STEPS = 13

worker = Worker(name="bench no-op workers")


@worker.step("split")
async def split(data: dict[str, Any]) -> dict[str, Any]:
    """`{"items": [0, 1, ..., n-1]}`, n from the payload (default 10): the fan-out list."""
    return {"items": list(range(int(data.get("n", 10))))}


@worker.step("work")
async def work(data: dict[str, Any]) -> dict[str, Any]:
    """One child: echo its element."""
    return {"item": data["item"]}


@worker.step("sum")
async def total(data: dict[str, Any]) -> dict[str, Any]:
    """The gathered children: their sum."""
    return {"total": sum(data["items"])}


@worker.step("title")
async def title(data: dict[str, Any]) -> dict[str, Any]:
    """The independent step: a title from the payload's `k`."""
    return {"title": f"title-{data.get('k', 0)}"}


async def _next(data: dict[str, Any]) -> dict[str, Any]:
    """One step of the linear workflow: count the steps done so far."""
    return {"n": int(data.get("n", 0)) + 1}


for _i in range(1, LINEAR_STEPS + 1):
    worker.step(f"s{_i}")(_next)
