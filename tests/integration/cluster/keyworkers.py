"""The key-routing test's worker: `book` holds each request a while and writes down when it
ran (one JSON line per request, to the file its payload names), so the test can tell from the
worker's own record whether two requests of one account ever ran at the same time."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pyworker import StepContext, Worker

worker = Worker(prefetch=50, name="key-routing worker", stop_timeout_s=5)
_running: dict[str, int] = {}  # requests of each account in hand now, in this process


@worker.step("book")
async def book(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    account = data["account"]
    _running[account] = _running.get(account, 0) + 1
    beside = _running[account] - 1  # others of its account in hand as it starts
    started = time.monotonic()
    await asyncio.sleep(data.get("hold_s", 0.05))
    ended = time.monotonic()
    _running[account] -= 1
    line = {"cid": ctx.correlation_id, "account": account, "start": started, "end": ended}
    with open(data["record"], "a", encoding="utf-8") as record:
        record.write(json.dumps({**line, "beside": beside}) + "\n")
    return {"account": account, "n": data["n"]}
