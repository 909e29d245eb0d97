"""The cluster-wide limits tests' worker: `fetch` holds each request a while and writes down
when it ran and how many requests it had in hand as it started (one JSON line per request, to
the file its payload names), so a test can tell from the worker's own record how many
requests the managers together had out at once."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pyworker import StepContext, Worker

worker = Worker(prefetch=100, name="limits worker", stop_timeout_s=5)
_in_hand = 0  # requests of `fetch` in hand now, in this process


@worker.step("fetch")
async def fetch(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    global _in_hand
    _in_hand += 1
    beside = _in_hand - 1  # others in hand as it starts
    started = time.monotonic()
    await asyncio.sleep(data.get("hold_s", 0.0))
    ended = time.monotonic()
    _in_hand -= 1
    line = {
        "cid": ctx.correlation_id, "tag": data.get("tag"), "start": started, "end": ended,
        "beside": beside,
    }  # fmt: skip
    with open(data["record"], "a", encoding="utf-8") as record:
        record.write(json.dumps(line) + "\n")
    return {"n": data["n"]}
