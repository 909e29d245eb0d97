"""The engine's and the recorder's CPU per step, in-process: no broker, no journal, no workers.

`python bench/engine_cost.py [JOBS]` runs JOBS word-counts jobs (default 2,000; 13 worker
steps each) through `engine.apply` and `recorder.record`, answering every request at once, and
prints the process CPU time per worker step in microseconds. It reads no clock but the
process's CPU time, so a busy machine disturbs it less than the throughput run; compare two
trees by running it from each (`PYTHONPATH=<tree>`), alternating.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections import deque

from bench.shapes import WORDCOUNT, workflow_yaml
from workflow_manager.config import parse_workflows
from workflow_manager.engine import (
    Command,
    Dispatch,
    EngineState,
    Event,
    JobSubmitted,
    StepReplied,
    apply,
)
from workflow_manager.recorder import record


def _output(request: Dispatch) -> bytes:
    """What bench/workers.py would answer."""
    if request.step == "split":
        return json.dumps({"items": list(range(10))}).encode()
    if request.step == "work":
        return json.dumps({"item": request.body["item"]}).encode()
    if request.step == "sum":
        return b'{"total": 45}'
    return b'{"title": "title"}'


def cpu_us_per_step(jobs: int) -> float:
    """CPU microseconds per worker step over `jobs` word-counts jobs."""
    state = EngineState.from_workflows(parse_workflows(workflow_yaml("bench")))
    steps, clock = 0, 1.0
    pending: deque[Dispatch] = deque()

    def step(event: Event) -> None:
        commands: list[Command] = apply(state, event)[1]
        record(event, commands, "wm")
        pending.extend(c for c in commands if isinstance(c, Dispatch))

    started = time.process_time()
    for n in range(jobs):
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"job-{n}"))
        step(JobSubmitted(job_id, WORDCOUNT, {"n": 10}, clock))
        while pending:
            request = pending.popleft()
            clock += 0.001
            step(StepReplied(request.job_id, request.step, _output(request), clock, attempt=1))
            steps += 1
    return (time.process_time() - started) / steps * 1e6


if __name__ == "__main__":
    print(f"{cpu_us_per_step(int(sys.argv[1]) if len(sys.argv) > 1 else 2000):.2f}")
