"""The kit against real worker processes: it passes good echo workers and fails broken ones,
naming the rule each bug breaks."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import aio_pika
import pytest

from manager.conformance.rules import RULES

from ..harness import ROOT, Process
from .kinds import BROKEN_WORKERS, GOOD_WORKERS, WorkerKind

LINE = re.compile(r"^(PASS|FAIL|SKIP)  (\S+)\s+(.*)$")
ALL_RULES = {rule.name for rule in RULES}


@dataclass(frozen=True)
class KitRun:
    """The kit's exit code, its verdict per rule and everything it printed."""

    code: int
    verdicts: dict[str, tuple[str, str]]
    output: str

    def with_status(self, status: str) -> set[str]:
        """The rules that got `status`."""
        return {rule for rule, (got, _reason) in self.verdicts.items() if got == status}


async def run_kit(queue: str, *args: str, timeout_s: float = 90) -> KitRun:
    """Run `workflow-manager conformance QUEUE ARGS` as a process."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "manager", "conformance", queue, *args,
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    text = out.decode()
    verdicts = {}
    for line in text.splitlines():
        if match := LINE.match(line):
            verdicts[match[2]] = (match[1], match[3])
    assert proc.returncode is not None
    return KitRun(proc.returncode, verdicts, text)


StartWorker = Callable[[WorkerKind], Awaitable[tuple[str, Process]]]


@pytest.fixture
async def start_worker(amqp_url: str, unique: str) -> AsyncIterator[StartWorker]:
    """Start a worker kind on a queue of this test's; stopped and its queue deleted after."""
    started: list[tuple[str, Process]] = []

    async def start(kind: WorkerKind) -> tuple[str, Process]:
        queue = f"{unique}.{kind.name}"
        env = {"QUEUE": queue, "AMQP_URL": amqp_url, **kind.env}
        process = await Process.start(kind.name, *kind.argv(queue), env=env, cwd=ROOT / kind.cwd)
        started.append((queue, process))
        await process.wait_for_line(rf"listening on {re.escape(queue)}")
        return queue, process

    yield start
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        for queue, process in started:
            await process.stop()
            await channel.queue_delete(queue)


@pytest.mark.parametrize("kind", GOOD_WORKERS, ids=lambda kind: kind.name)
async def test_a_good_worker_passes_every_rule_in_seconds(start_worker, kind):
    queue, worker = await start_worker(kind)
    loop = asyncio.get_running_loop()
    started_s = loop.time()

    run = await run_kit(queue, *kind.kit_args, "--timeout", "10")

    assert run.code == 0, run.output
    assert run.with_status("PASS") == ALL_RULES, run.output
    assert loop.time() - started_s < 15, run.output
    assert await worker.stop() == 0, worker.output  # the echo contract: SIGTERM drains, exit 0


@pytest.mark.parametrize(
    ("kind", "failing"), BROKEN_WORKERS, ids=[kind.name for kind, _ in BROKEN_WORKERS]
)
async def test_a_broken_worker_fails_the_rule_it_breaks(start_worker, kind, failing):
    queue, _worker = await start_worker(kind)

    run = await run_kit(queue, *kind.kit_args, "--timeout", "2")

    assert run.code == 1, run.output
    assert run.with_status("FAIL") == failing, run.output
    assert run.with_status("PASS") | run.with_status("SKIP") == ALL_RULES - failing
    assert re.search(r": \d+ passed, [1-9]\d* failed, \d+ skipped in [\d.]+s: FAIL$", run.output)
