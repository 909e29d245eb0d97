"""A trigger that joins a debounce window tells the run event job.debounced, on the window's job."""

from __future__ import annotations

from tests.unit.engine.helpers import make_state
from workflow_manager.engine import JobSubmitted, apply
from workflow_manager.events.model import EVENT_TYPES, run_events

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"
YAML = """
workflows:
  - name: w
    debounce: {key: order, period: 3, mode: trailing}
    steps: [{name: a}]
"""


def test_a_debounced_trigger_is_a_run_event_of_the_windows_job():
    state = make_state(YAML)
    first = run_events(apply(state, JobSubmitted(FIRST, "w", {"order": 1}, 5.0))[1], 9.0)
    assert [event.type for event in first] == ["job.scheduled"]
    second = run_events(apply(state, JobSubmitted(SECOND, "w", {"order": 1}, 6.0))[1], 9.0)
    assert [event.to_json() for event in second] == [
        {"type": "job.debounced", "job": FIRST, "root": FIRST, "workflow": "w",
         "status": "scheduled", "reason": f"trigger {SECOND} with debounce key 1 (trailing)",
         "start_at": 8.0, "at": 6.0},
    ]  # fmt: skip
    assert "job.debounced" in EVENT_TYPES
