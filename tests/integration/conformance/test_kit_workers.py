"""The kit against real worker processes: it passes good echo workers and fails broken ones,
naming the rule each bug breaks."""

from __future__ import annotations

import asyncio
import re

import pytest

from .kinds import BROKEN_WORKERS, GOOD_WORKERS
from .kitrun import ALL_RULES, run_kit


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
