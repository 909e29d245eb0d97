"""Joins met and batches reduced are counted from the engine's commands, labelled by workflow,
task step and policy; run events of such steps carry counts and references, never values."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.unit.engine.helpers import JOB, child_id, cid, make_state, reply, submit, workflows
from workflow_manager.engine import Command, StepFinished, StepReplied, apply
from workflow_manager.events.model import run_events
from workflow_manager.metrics import METRIC_NAMES, Metrics

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
REF = {"$ref": f"wm://main/{JOB}/{DIGEST}", "sha256": DIGEST, "size": 100_000_000}

FLOWS = """
workflows:
  - name: joined
    steps:
      - name: ask
        task: per_item
        join: {min_success: '50%'}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - name: work
  - name: summed
    steps:
      - name: fan
        task: per_item
        reduce: {step: total, batch: 2}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - name: work
"""


def _value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(f"workflow_manager_{name}", labels)


def _observed(metrics: Metrics, *batches: list[Command]) -> list[Command]:
    seen = [command for batch in batches for command in batch]
    for batch in batches:
        metrics.observe(batch)
    return seen


def test_a_join_met_is_counted_once_with_its_policy():
    metrics = Metrics(workflows(FLOWS))
    state = make_state(FLOWS)
    kids = [child_id(JOB, "ask", i) for i in range(4)]
    _observed(
        metrics,
        submit(state, "joined", {"items": [1, 2, 3, 4], "big": REF}),
        reply(state, cid(kids[0], "work"), {"item": REF}),
        reply(state, cid(kids[1], "work"), {"item": 2}),  # 2 of 4: met, the rest cancelled
    )
    labels = {"workflow": "joined", "step": "ask", "policy": "min_success"}
    assert _value(metrics, "joins_met_total", **labels) == 1.0
    # A plain step completing counts nothing here.
    assert _value(metrics, "joins_met_total", workflow="joined", step="work", policy="") is None


def test_each_reduced_batch_is_counted_under_its_task_step():
    metrics = Metrics(workflows(FLOWS))
    state = make_state(FLOWS)
    kids = [child_id(JOB, "fan", i) for i in range(3)]
    commands = [submit(state, "summed", {"items": [1, 2, 3]})]
    for kid in kids[:2]:
        commands.append(reply(state, cid(kid, "work"), {"v": 1}))
    commands.append(apply(state, StepReplied(JOB, "total", b'{"n": 2}', 3.0))[1])
    commands.append(reply(state, cid(kids[2], "work"), {"v": 1}))
    commands.append(apply(state, StepReplied(JOB, "total", b'{"n": 3}', 4.0))[1])
    seen = _observed(metrics, *commands)
    assert _value(metrics, "reduce_batches_total", workflow="summed", step="fan") == 2.0
    assert state.jobs[JOB].steps["fan"].output == {"n": 3}
    # No event of the run holds a value: references and results stay out of events.
    for event in run_events(seen, 5.0):
        assert "$ref" not in json.dumps(event.to_json())


def test_the_new_metrics_are_listed():
    assert METRIC_NAMES["workflow_manager_joins_met_total"] == "counter"
    assert METRIC_NAMES["workflow_manager_reduce_batches_total"] == "counter"


@dataclass(slots=True)
class _FinishedWithTotals(StepFinished):
    """A StepFinished carrying a task step's totals, as the engine gives them (`fan_in`)."""

    fan_in: dict[str, Any] | None = None


def test_a_task_steps_completed_event_carries_its_join_and_reduce_totals():
    totals = {
        "join": {"policy": "first 2", "needed": 2, "succeeded": 2, "failed": 0, "left": 3,
                 "then": "finish"},
        "reduce": {"batches": 1, "reduced": 2},
    }  # fmt: skip
    command = _FinishedWithTotals(
        JOB, JOB, "w", "fan", 0, "completed", None, None, 1.0, 2.0, fan_in=totals
    )
    (event,) = run_events([command], 2.0)
    body = event.to_json()
    assert (body["type"], body["join"], body["reduce"]) == (
        "step.completed", totals["join"], totals["reduce"],
    )  # fmt: skip
    plain = StepFinished(JOB, JOB, "w", "one", 1, "completed", None, None, 1.0, 2.0)
    (event,) = run_events([plain], 2.0)
    assert "join" not in event.to_json() and "reduce" not in event.to_json()
