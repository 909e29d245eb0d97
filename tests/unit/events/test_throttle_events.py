"""A step over its rate limit tells step.throttled, with when it may go; metrics count the wait."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.unit.engine.helpers import make_state
from workflow_manager.engine import Dispatch, JobSubmitted, TimerFired, apply
from workflow_manager.events.model import EVENT_TYPES, run_events
from workflow_manager.metrics import Metrics

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"
YAML = """
workflows:
  - name: w
    steps: [{name: call, rate: {limit: 1, per: 10}}]
"""


def test_a_throttled_step_is_a_run_event_and_counted_with_its_wait():
    state = make_state(YAML)
    metrics = Metrics(["w"])
    metrics.observe(apply(state, JobSubmitted(FIRST, "w", {}, 5.0))[1])
    commands = apply(state, JobSubmitted(SECOND, "w", {}, 6.0))[1]
    metrics.observe(commands)
    throttled = [e for e in run_events(commands, 6.0) if e.type == "step.throttled"]
    assert [event.to_json() for event in throttled] == [
        {"type": "step.throttled", "job": SECOND, "root": SECOND, "workflow": "w",
         "step": "call", "status": "throttled", "start_at": 15.0, "at": 6.0},
    ]  # fmt: skip
    assert "step.throttled" in EVENT_TYPES
    released = apply(state, TimerFired(f"rate:{SECOND}:call:1", 15.0))[1]
    assert [c.job_id for c in released if isinstance(c, Dispatch)] == [SECOND]
    metrics.observe(released)
    samples = {
        (sample.name, sample.labels.get("le")): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
        if sample.labels.get("step") == "call"
    }
    assert samples[("workflow_manager_throttled_total", None)] == 1.0
    assert samples[("workflow_manager_throttle_wait_seconds_sum", None)] == 9.0
    assert samples[("workflow_manager_throttle_wait_seconds_bucket", "10.0")] == 1.0
    assert samples[("workflow_manager_throttle_wait_seconds_bucket", "5.0")] == 0.0
