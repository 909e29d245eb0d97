"""Workers for the end-to-end tests, one handler per queue listed in STEP_QUEUES.

What a step does depends on its name (from the correlation id), so one process serves every
test workflow: `square`, `prep`, `pack` and `boom` do what their names say, `flaky...` fails
its first `fail_times` (default 2) attempts, `meta...` reports the job metadata it got and
patches it; any other step returns its input plus a trace of
the steps that led to it.
"""

from __future__ import annotations

import os
from typing import Any

from pyworker import StepContext, Worker

worker = Worker(prefetch=20)


def trace(data: dict[str, Any], step: str) -> dict[str, Any]:
    """Input plus `path` (steps so far), `from` (this step) and a `seen_<step>` flag."""
    return {**data, "path": [*data.get("path", []), step], "from": step, f"seen_{step}": True}


def handle(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    """Dispatch on the step name."""
    if ctx.step.startswith("boom"):
        raise ValueError(f"boom in {ctx.step}")
    if ctx.step.startswith("flaky") and ctx.attempt <= data.get("fail_times", 2):
        raise RuntimeError(f"flaky failure on attempt {ctx.attempt}")
    if ctx.step.startswith("meta"):
        # Job metadata: report what arrived, and add to it for the requests after this one.
        ctx.patch_meta({"by": {ctx.step: True}})
        if ctx.step == "meta-leaf":
            return {"item": {"seen": dict(ctx.meta)}}
        return {**data, f"meta_{ctx.step}": dict(ctx.meta)}
    if ctx.step == "square":
        return {"item": data["item"] ** 2, "squared_by": ctx.step}
    if ctx.step == "prep":
        return {"items": data["group"]}
    if ctx.step == "pack":
        return {"group": data["items"]}
    return trace(data, ctx.step)


for queue in filter(None, os.environ.get("STEP_QUEUES", "").split(",")):
    worker.step(queue)(handle)
