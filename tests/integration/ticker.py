"""The `ticker` workflow the schedule tests run (an `every: 1` schedule), and the fire times
its jobs' ids were derived from."""

from __future__ import annotations

import time

from workflow_manager.config.schedules import schedule_job_id

TICKER = """
workflows:
  - name: ticker
    schedules:
      # overlap: allow, so a slow job on a busy machine never skips a firing here (the
      # overlap rule has its engine tests).
      - {name: tick, every: 1, payload: {from: tick}, overlap: allow}
    steps:
      - {name: tock, queue: "{p}.tock"}
"""


def fire_times(job_ids: list[str], since: float) -> list[int]:
    """The fire time (whole seconds) each ticker job's id was derived from, sorted."""
    by_id = {
        schedule_job_id("ticker", "tick", float(t)): t
        for t in range(int(since) - 5, int(time.time()) + 5)
    }
    assert all(job_id in by_id for job_id in job_ids), job_ids
    return sorted(by_id[job_id] for job_id in job_ids)
