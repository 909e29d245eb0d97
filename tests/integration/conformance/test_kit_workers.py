"""The kit against real worker processes: it passes good echo workers and fails broken ones,
naming the rule each bug breaks."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from .kinds import BROKEN_WORKERS, GOOD_WORKERS
from .kitrun import ALL_RULES, run_kit


@pytest.mark.parametrize("kind", GOOD_WORKERS, ids=lambda kind: kind.name)
async def test_a_good_worker_passes_every_rule_in_seconds(start_worker, payload_store, kind):
    queue, worker = await start_worker(kind)
    loop = asyncio.get_running_loop()
    started_s = loop.time()

    run = await run_kit(queue, *kind.kit_argv(payload_store), "--timeout", "10")

    assert run.code == 0, run.output
    assert run.with_status("PASS") == ALL_RULES, run.output
    assert loop.time() - started_s < 15, run.output
    assert await worker.stop() == 0, worker.output  # the echo contract: SIGTERM drains, exit 0
    # The kit removes what it and the worker stored for its jobs.
    store_root = Path(payload_store.split("=file://", 1)[1])
    assert list(store_root.iterdir()) == [], run.output


@pytest.mark.parametrize(
    ("kind", "failing"), BROKEN_WORKERS, ids=[kind.name for kind, _ in BROKEN_WORKERS]
)
async def test_a_broken_worker_fails_the_rule_it_breaks(start_worker, payload_store, kind, failing):
    queue, _worker = await start_worker(kind)

    run = await run_kit(queue, *kind.kit_argv(payload_store), "--timeout", "2")

    assert run.code == 1, run.output
    assert run.with_status("FAIL") == failing, run.output
    assert run.with_status("PASS") | run.with_status("SKIP") == ALL_RULES - failing
    assert re.search(r": \d+ passed, [1-9]\d* failed, \d+ skipped in [\d.]+s: FAIL$", run.output)


async def test_a_worker_that_ignores_references_is_told_why(start_worker, payload_store):
    kind = next(kind for kind, _failing in BROKEN_WORKERS if kind.name == "ignore-refs")
    queue, _worker = await start_worker(kind)

    run = await run_kit(queue, *kind.kit_argv(payload_store), "--timeout", "2")

    status, reason = run.verdicts["payload-ref"]
    assert status == "FAIL" and "hands back the reference the kit sent (wm://conformance/" in reason
    assert "the handler was given the reference object, not the value" in reason
    status, reason = run.verdicts["payload-ref-missing"]
    assert status == "FAIL" and "names nothing in the store has no x-error header" in reason
