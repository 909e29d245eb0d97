"""Pausing and resuming a schedule tells run events: schedule.paused and schedule.resumed."""

from __future__ import annotations

from tests.unit.engine.helpers import make_state
from workflow_manager.engine import SchedulePaused, apply
from workflow_manager.events.model import EVENT_TYPES, run_events

YAML = """
workflows:
  - name: w
    schedules: [{name: nightly, cron: "0 2 * * *"}]
    steps: [{name: a}]
"""


def test_pausing_and_resuming_a_schedule_are_run_events_naming_it():
    state = make_state(YAML)
    paused = run_events(apply(state, SchedulePaused("w", "nightly", True, 5.0))[1], 9.0)
    resumed = run_events(apply(state, SchedulePaused("w", "nightly", False, 6.0))[1], 9.0)
    assert [event.to_json() for event in paused + resumed] == [
        {"type": "schedule.paused", "job": "w/nightly", "root": "w/nightly", "workflow": "w",
         "status": "paused", "schedule": "nightly", "at": 5.0},
        {"type": "schedule.resumed", "job": "w/nightly", "root": "w/nightly", "workflow": "w",
         "status": "running", "schedule": "nightly", "at": 6.0},
    ]  # fmt: skip
    assert {"schedule.paused", "schedule.resumed"} <= set(EVENT_TYPES)


def test_a_refused_pause_tells_no_event():
    state = make_state(YAML)
    assert run_events(apply(state, SchedulePaused("w", "weekly", True, 5.0))[1], 9.0) == []
