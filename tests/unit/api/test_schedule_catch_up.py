"""Catch-up at start covers only the firings missed since a schedule exists: the first start
that serves a schedule (a fresh journal, or a schedule added to the config) catches nothing
up, and that start's time is journaled, so a later start catches up what it missed since."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.unit.api.conftest import FakeClock, Service, load_workflows
from workflow_manager.config.schedules import schedule_job_id
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings
from workflow_manager.transport.memory import MemoryTransport

BARE = """
workflows:
  - {name: nightly, steps: [{name: run}]}
"""
SCHEDULED = """
workflows:
  - name: nightly
    schedules: [{name: at-two, cron: "0 2 * * *"}, {name: hourly, every: 3600}]
    steps: [{name: run}]
"""
DAY = 24 * 3600.0


def _at(*fields: int) -> float:
    return datetime(*fields, tzinfo=UTC).timestamp()


async def _started_jobs(tmp_path: Path, clock: FakeClock, yaml: str) -> list[str]:
    """Start a manager on the test's journal at the clock's time; the jobs it has, stopped."""
    service = Service(
        load_workflows(yaml), ManagerSettings(queue="wm"), await open_journal(tmp_path / "wm.db"),
        MemoryTransport(), clock=clock,
    )  # fmt: skip
    await service.start()
    try:
        return sorted(service.state.jobs)
    finally:
        await service.stop()


async def test_a_fresh_journal_catches_nothing_up(tmp_path, clock):
    assert await _started_jobs(tmp_path, clock, SCHEDULED) == []
    clock.advance(60)  # restarted a minute later: nothing was missed
    assert await _started_jobs(tmp_path, clock, SCHEDULED) == []


async def test_a_schedule_added_later_exists_from_the_first_start_that_serves_it(tmp_path, clock):
    clock.now = _at(2026, 3, 1, 12, 10)
    assert await _started_jobs(tmp_path, clock, BARE) == []
    clock.now = _at(2026, 3, 2, 12, 10)  # 02:00 passed while no manager served the schedule
    assert await _started_jobs(tmp_path, clock, SCHEDULED) == []
    clock.now = _at(2026, 3, 3, 3, 30)  # down over 02:00 and 03:00: the latest of each runs
    assert await _started_jobs(tmp_path, clock, SCHEDULED) == sorted(
        [
            schedule_job_id("nightly", "at-two", _at(2026, 3, 3, 2, 0)),
            schedule_job_id("nightly", "hourly", _at(2026, 3, 3, 3, 0)),
        ]
    )


async def test_a_schedule_with_catch_up_false_never_catches_up(tmp_path, clock):
    yaml = SCHEDULED.replace('cron: "0 2 * * *"}', 'cron: "0 2 * * *", catch_up: false}')
    assert await _started_jobs(tmp_path, clock, yaml) == []
    clock.advance(DAY)
    assert await _started_jobs(tmp_path, clock, yaml) == [
        schedule_job_id("nightly", "hourly", clock.now // 3600 * 3600)
    ]
