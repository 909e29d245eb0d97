"""How long a manager takes to start on a journal holding many running jobs.

Builds a journal with N running jobs of the word-counts shape (each with its split done and
its children fanned out, so replay does real work), then starts `workflow-manager serve` on
it and reports the time from process start until it consumes again.

    python bench/recovery.py [--jobs 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import aio_pika

from workflow_manager.config import parse_workflows
from workflow_manager.engine import EngineState, JobSubmitted, StepReplied, apply
from workflow_manager.journal import open_journal
from workflow_manager.recorder import record
from workflow_manager.transport import manager_queues

WORKFLOW = """
workflows:
  - name: shape
    steps:
      - {name: split, queue: "{p}.split"}
      - {name: fan, task: each, depends: [split]}
      - {name: sum, depends: [fan], queue: "{p}.sum"}
      - {name: title, queue: "{p}.title"}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: work, queue: "{p}.work"}
"""


async def build_journal(path: Path | str, prefix: str, jobs: int, children: int) -> float:
    """Write `jobs` running jobs into a fresh journal; returns seconds spent."""
    started = time.perf_counter()
    workflows = parse_workflows(WORKFLOW.replace("{p}", prefix))
    state = EngineState.from_workflows(workflows)
    journal = await open_journal(path)
    wf = workflows["shape"]
    await journal.save_definitions(
        [(wf.content_hash, wf.name, wf.model_dump_json(by_alias=True, exclude_defaults=True))]
    )
    items = json.dumps({"items": list(range(children))}).encode()
    for n in range(jobs):
        job_id = str(uuid.uuid4())
        at = 1_700_000_000.0 + n
        for event in (
            JobSubmitted(job_id, "shape", {"n": n}, at, definition=wf.content_hash),
            StepReplied(job_id, "split", items, at + 0.5),
        ):
            _, commands = apply(state, event)
            result = record(event, commands, f"{prefix}.wm")
            # Pretend every request was confirmed, so the restart re-publishes nothing.
            result.batch.sent.extend((m.message_id, at) for m in result.outbound if m.message_id)
            journal.append(result.batch)
        if n % 500 == 0:
            await journal.flush()
    await journal.close()
    return time.perf_counter() - started


async def time_start(
    path: Path | str, config: Path, prefix: str, pin: Callable[[int], None] | None = None
) -> tuple[float, str]:
    """Start the manager on the journal; seconds until it consumes, and its ready line.

    `pin(pid)` right after the start (the bench's --pin).
    """
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "workflow_manager", "serve", "--config", str(config),
        "--db", str(path),
        "--queue", f"{prefix}.wm", "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    if pin is not None:
        pin(proc.pid)
    assert proc.stdout is not None
    ready = ""
    async for raw in proc.stdout:
        line = raw.decode(errors="replace").rstrip()
        if "consuming replies" in line:
            ready = line
            break
    elapsed = time.perf_counter() - started
    proc.terminate()
    await proc.wait()
    if not ready:
        raise SystemExit("the manager exited before consuming")
    return elapsed, ready


async def cleanup(prefix: str) -> None:
    """Delete the queues the run declared."""
    connection = await aio_pika.connect("amqp://guest:guest@127.0.0.1:5672/")
    async with connection:
        channel = await connection.channel()
        steps = (f"{prefix}.{name}" for name in ("split", "sum", "title", "work"))
        for name in (*steps, *manager_queues(f"{prefix}.wm")):
            await channel.queue_delete(name)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--children", type=int, default=10)
    args = parser.parse_args()
    prefix = "bench" + uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        path, config = Path(tmp) / "wm.db", Path(tmp) / "workflows.yaml"
        config.write_text(WORKFLOW.replace("{p}", prefix))
        built = await build_journal(path, prefix, args.jobs, args.children)
        size_mb = path.stat().st_size / 1e6
        print(f"journal: {args.jobs} running jobs, {size_mb:.1f} MB, built in {built:.1f}s")
        try:
            elapsed, ready = await time_start(path, config, prefix)
        finally:
            await cleanup(prefix)
    inner = re.search(r"ready in ([0-9.]+)s", ready)
    print(
        f"recovery: {elapsed:.2f}s from process start until consuming "
        f"({inner.group(1) if inner else '?'}s of it replaying the journal)"
    )


if __name__ == "__main__":
    asyncio.run(main())
