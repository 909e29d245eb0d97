"""Debounced triggers past the engine: journaled under the window's job (so replaying its rows
rebuilds the window and the last payload), answered `debounced` naming it, and counted."""

from __future__ import annotations

import json
import uuid

from tests.unit.engine.helpers import workflows
from workflow_manager.engine import EngineState, JobDebounced, JobSubmitted, apply, replay
from workflow_manager.journal.records import REPLAYED_KINDS, EventKind
from workflow_manager.metrics import Metrics
from workflow_manager.recorder import record, to_event

FLOW = """
workflows:
  - name: w
    debounce: {key: order, period: 2, mode: trailing}
    steps: [{name: sync}]
"""


def _id(n: int) -> str:
    return str(uuid.UUID(int=n + 1, version=4))


def _live(count: int):
    state = EngineState.from_workflows(workflows(FLOW))
    rows, outbound, commands = [], [], []
    for n in range(count):
        event = JobSubmitted(_id(n), "w", {"order": 1, "n": n}, 1.0 + n / 10, reply_to=f"r{n}")
        _, made = apply(state, event)
        result = record(event, made, "wm")
        rows.extend(result.batch.events)
        outbound.extend(result.outbound)
        commands.append(made)
        if n:
            assert result.debounced is not None and result.debounced.existing == _id(0)
    return state, rows, outbound, commands


def test_debounced_triggers_are_journaled_under_the_windows_job_and_replay_to_the_same_state():
    live, rows, _, _ = _live(5)
    submitted = [row for row in rows if row.kind == EventKind.SUBMITTED]
    assert [row.job_id for row in submitted] == [_id(0)] * 5  # filed under the window's job
    assert [row.meta["id"] for row in submitted] == [_id(n) for n in range(5)]
    replayed = [to_event(row) for row in rows if row.kind in REPLAYED_KINDS]
    rebuilt = replay(EngineState.from_workflows(workflows(FLOW)), replayed)
    assert rebuilt.debounce == live.debounce
    assert rebuilt.jobs[_id(0)].payload == live.jobs[_id(0)].payload == {"order": 1, "n": 4}
    assert rebuilt.timers == live.timers


def test_each_debounced_trigger_is_answered_debounced_naming_the_job():
    _, _, outbound, _ = _live(3)
    answers = {message.queue: message for message in outbound}
    assert set(answers) == {"r1", "r2"}  # the first hears when its job ends
    for n in (1, 2):
        message = answers[f"r{n}"]
        assert message.headers == {"x-status": "debounced", "x-job-id": _id(0)}
        assert message.correlation_id == _id(n)
        body = json.loads(message.body)
        assert body["job"] == _id(0)
        assert "debounce key 1" in body["reason"] and "last trigger's payload" in body["reason"]


def test_debounced_triggers_are_counted_per_workflow():
    _, _, _, commands = _live(4)
    metrics = Metrics(["w"])
    for made in commands:
        metrics.observe(made)
    assert sum(isinstance(c, JobDebounced) for made in commands for c in made) == 3
    sample = metrics.registry.get_sample_value(
        "workflow_manager_triggers_debounced_total", {"workflow": "w"}
    )
    assert sample == 3
