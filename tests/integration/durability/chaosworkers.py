"""Fast, deterministic workers for the durability tests; queue names get `--queue-prefix`.

`split` turns payload `n` into ten items, `double` (a task's child step) doubles one item,
`sum` adds them up and `title` names the job, so every job's correct result is known in
advance (see `helpers.expected_result`). `slow` sleeps `sleep_s` and says so first, so a test
can tell which worker process holds the request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pyworker import StepContext, Worker

worker = Worker(prefetch=50, name="durability chaos worker", stop_timeout_s=5)


@worker.step("split")
async def split(data: dict[str, Any]) -> dict[str, Any]:
    n = data["n"]
    output: dict[str, Any] = {"items": [n * 10 + i for i in range(10)]}
    if "delay_s" in data:
        output["delay_s"] = data["delay_s"]  # reaches the children with the task's input
    return output


@worker.step("double")
async def double(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("delay_s"):
        await asyncio.sleep(data["delay_s"])  # keeps jobs in flight long enough to disturb
    return {"item": data["item"] * 2}


@worker.step("sum")
async def total(data: dict[str, Any]) -> dict[str, Any]:
    return {"total": sum(data["items"])}


@worker.step("title")
async def title(data: dict[str, Any]) -> dict[str, Any]:
    return {"title": f"job {data['n']}"}


@worker.step("slow")
async def slow(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    print(f"working {ctx.correlation_id} redelivered={ctx.redelivered}", flush=True)
    await asyncio.sleep(data.get("sleep_s", 0))
    return {"done": data["n"] * 3}
