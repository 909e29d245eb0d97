"""The scheduler's own loop: every fire time is fired once, in order, even when a firing takes
longer than the schedule's period; a long stall skips to the next fire time from now."""

from __future__ import annotations

import asyncio

from workflow_manager.config import parse_workflows
from workflow_manager.config.schedules import Schedule, schedule_job_id
from workflow_manager.scheduler import _MAX_MISSED, Scheduler

FLOW = """
workflows:
  - name: tick
    schedules:
      - {name: every-second, every: 1, catch_up: false}
    steps:
      - name: s
"""


class Orchestrator:
    """Fires by noting the job id; each firing takes `slow[n]` seconds of the clock (n-th
    firing) and stops the test after `stop_after` firings."""

    def __init__(self, slow: dict[int, float], stop_after: int) -> None:
        self.workflows = parse_workflows(FLOW)
        self.now = 1000.99  # the first fire time, 1001, is 10 ms away
        self.slow = slow
        self.stop_after = stop_after
        self.fired: list[str] = []
        self.done = asyncio.Event()

    async def schedule_since(self, workflow: str, schedule: str) -> float:
        return 0.0

    async def fire_schedule(self, workflow: str, schedule: Schedule, job_id: str) -> bool:
        self.fired.append(job_id)
        self.now += self.slow.get(len(self.fired), 1.0)  # the next is due at once: no wait
        if len(self.fired) >= self.stop_after:
            self.done.set()
            await asyncio.Event().wait()  # until the scheduler is closed
        return True


async def _fired_times(slow: dict[int, float], count: int) -> list[float]:
    orchestrator = Orchestrator(slow, count)
    scheduler = Scheduler(orchestrator, lambda: orchestrator.now)  # type: ignore[arg-type]
    await scheduler.start()
    try:
        await asyncio.wait_for(orchestrator.done.wait(), 10)
    finally:
        scheduler.close()
    ids = {schedule_job_id("tick", "every-second", float(t)): float(t) for t in range(990, 1100)}
    return [ids[job_id] for job_id in orchestrator.fired]


async def test_a_firing_slower_than_the_period_does_not_lose_the_next_ones() -> None:
    # The second firing takes 2.5 s: the two fire times that came due meanwhile go next.
    assert await _fired_times({2: 2.5}, 6) == [1001.0, 1002.0, 1003.0, 1004.0, 1005.0, 1006.0]


async def test_a_stall_longer_than_the_missed_firings_kept_skips_to_now() -> None:
    # The first firing takes longer than the firings kept late: the next is the next from now.
    assert await _fired_times({1: _MAX_MISSED + 5.0}, 3) == [1001.0, 1016.0, 1017.0]
