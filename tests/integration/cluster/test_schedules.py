"""A schedule with two managers sharing the partitions: each firing starts one job (on the
manager running its partition), pausing it through one manager holds every firing, whichever
manager runs it, until it is resumed through the other, and a manager's death loses none."""

from __future__ import annotations

import asyncio
import signal
import time

import httpx
import pytest

from ..ticker import TICKER, fire_times
from .rig import Member, until


def _ticker_jobs(cluster) -> list[str]:
    return [job_id for (job_id,) in cluster.query("SELECT id FROM jobs WHERE workflow = 'ticker'")]


async def _two_managers_ticking(cluster) -> tuple[float, Member, Member]:
    """Two managers sharing the partitions, running the ticker: when they started, and them."""
    cluster.config.write_text(TICKER.replace("{p}", cluster.prefix))
    cluster.queues.add(f"{cluster.prefix}.tock")
    started = time.time()
    first, second = await cluster.start_manager(), await cluster.start_manager()
    await cluster.balanced([first, second])
    return started, first, second


@pytest.mark.timeout(120)
async def test_a_schedule_fires_once_per_firing_and_pauses_on_every_manager(cluster):
    started, first, second = await _two_managers_ticking(cluster)
    await until(lambda: len(_ticker_jobs(cluster)) >= 6, "six firings")
    fired = fire_times(_ticker_jobs(cluster), started)
    assert fired == list(range(fired[0], fired[0] + len(fired))), fired  # once each, in order

    async with httpx.AsyncClient(timeout=10) as http:
        paused = await http.post(f"{second.api_url}/api/schedules/ticker/tick/pause")
        assert paused.status_code == 200 and paused.json()["paused"] is True, paused.text
        # A firing already under way when the pause committed may still start: one at most.
        before = len(_ticker_jobs(cluster)) + 1
        # Three periods of the schedule with no firing (an absence takes watching).
        await asyncio.sleep(3.5)
        assert len(_ticker_jobs(cluster)) <= before, "a paused schedule fired"
        listed = (await http.get(f"{first.api_url}/api/schedules")).json()["schedules"]
        assert [s["paused"] for s in listed] == [True]
        resumed = await http.post(f"{first.api_url}/api/schedules/ticker/tick/resume")
        assert resumed.status_code == 200 and resumed.json()["paused"] is False, resumed.text
    await until(lambda: len(_ticker_jobs(cluster)) >= before + 3, "firings after the resume")


@pytest.mark.timeout(120)
async def test_firings_due_while_a_killed_managers_partitions_wait_run_once_taken_over(cluster):
    # Firings' ids fall in every partition. While the killed manager's leases run out (~3 s),
    # nobody fires those of its partitions; the survivor, taking them over, fires what they
    # missed since the dead manager's last renewal: no second goes without its firing.
    started, first, second = await _two_managers_ticking(cluster)
    await until(lambda: len(_ticker_jobs(cluster)) >= 3, "three firings")
    await first.process.stop(signal.SIGKILL)
    killed_at = int(time.time())
    await cluster.balanced([second])
    await until(
        lambda: max(fire_times(_ticker_jobs(cluster), started)) >= killed_at + 6,
        "firings after the take-over",
    )
    fired = fire_times(_ticker_jobs(cluster), started)
    missing = sorted(set(range(fired[0], fired[-1] + 1)) - set(fired))
    assert not missing, f"no firing for {missing} (killed at {killed_at}): {fired}"
    assert len(fired) == len(set(fired))
