"""A compensating job's run events and metrics: job.compensating, then per step being undone
step.compensating and step.compensated (or step.compensation_failed)."""

from __future__ import annotations

from tests.unit.engine.helpers import JOB, cid, make_state, reply, submit
from workflow_manager.events.model import EVENT_TYPES, run_events
from workflow_manager.metrics import Metrics

YAML = """
workflows:
  - name: w
    steps:
      - name: a
        compensate: {name: undo-a}
      - name: b
        depends: [a]
        compensate: {name: undo-b}
      - name: c
        depends: [b]
"""


def test_compensation_events_and_metrics():
    state = make_state(YAML)
    metrics = Metrics(["w"])
    batches = [submit(state), reply(state, cid(JOB, "a"), {}), reply(state, cid(JOB, "b"), {})]
    batches.append(reply(state, cid(JOB, "c"), error="boom"))
    batches.append(reply(state, cid(JOB, "undo-b"), error="cannot"))
    batches.append(reply(state, cid(JOB, "undo-a"), {}))
    events = []
    for commands in batches[3:]:
        metrics.observe(commands)
        events += run_events(commands, 9.0)
    seen = [(e.type, e.step, e.status, e.reason) for e in events]
    assert ("job.compensating", None, "compensating", "failed") in seen
    assert seen.index(("step.compensating", "b", "compensating", None)) < seen.index(
        ("step.dispatched", "undo-b", "running", None)
    )
    assert ("step.compensation_failed", "b", "failed", "cannot") in seen
    assert ("step.compensated", "a", "compensated", None) in seen
    assert seen[-1] == ("job.failed", None, "failed", None)
    assert {e.type for e in events} <= set(EVENT_TYPES)
    text = metrics.render().decode()
    assert 'compensations_total{outcome="failed",step="b",workflow="w"} 1.0' in text
    assert 'compensations_total{outcome="compensated",step="a",workflow="w"} 1.0' in text
