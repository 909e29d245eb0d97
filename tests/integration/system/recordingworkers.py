"""A worker that keeps its own record: one JSON line per request it is sent (its correlation id,
attempt and input), appended to the file RECORD_FILE names, for every queue in STEP_QUEUES.

Its record is the ground truth a test counts requests by, independent of the manager's view.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pyworker import StepContext, Worker

worker = Worker(prefetch=20)


def handle(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    """Record the request, then answer with what it was given."""
    line = {"cid": ctx.correlation_id, "attempt": ctx.attempt, "data": data}
    with open(os.environ["RECORD_FILE"], "a", encoding="utf-8") as record:
        record.write(json.dumps(line) + "\n")
    return {"handled": data}


for queue in filter(None, os.environ.get("STEP_QUEUES", "").split(",")):
    worker.step(queue)(handle)
