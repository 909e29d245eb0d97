"""The worker process of the outage tests: `square` answers `{"n": n, "square": n*n}` after
`delay_s`, and says whether the request was a redelivery, so a test can tell why a request
was answered twice. Its connection is named `pyworker <host> pid=<pid>` (the default)."""

from __future__ import annotations

import asyncio
from typing import Any

from pyworker import StepContext, Worker

worker = Worker(prefetch=10, stop_timeout_s=5)


@worker.step("square")
async def square(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    await asyncio.sleep(data.get("delay_s", 0))  # keeps requests in flight across the outage
    n = data["n"]
    return {"n": n, "square": n * n, "redelivered": ctx.redelivered}


@worker.step("ping")
async def ping(data: dict[str, Any]) -> dict[str, Any]:
    return data  # an idle queue: how soon the worker consumes again, not how long its backlog is
