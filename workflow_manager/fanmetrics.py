"""Prometheus counters of how task steps gather their children: joins met and batches reduced.

Counted from the committed `StepFinished` commands, like the step metrics
(`workflow_manager.metrics`), with the same labels: names from the workflow definitions, never
ids. Which step has a join, and which step is a reducer of which task step, is read from the
definitions once, when the manager starts.

- `workflow_manager_joins_met_total{workflow, step, policy}`: a task step with
  `join: {min_success}` or `{first}` completed (policy `min_success` or `first`).
- `workflow_manager_reduce_batches_total{workflow, step}`: a batch of a task step's children
  reduced (its reducer replied); `step` is the task step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from workflow_manager.config.models import Workflow
from workflow_manager.engine import StepFinished
from workflow_manager.engine.extension import every_step

__all__ = ["FAN_IN_METRIC_NAMES", "FanInCounters"]

_P = "workflow_manager_"

FAN_IN_METRIC_NAMES: dict[str, str] = {
    f"{_P}joins_met_total": "counter",
    f"{_P}reduce_batches_total": "counter",
}


def _shapes(workflow: Workflow) -> tuple[dict[str, str], dict[str, str]]:
    """The workflow's join steps (name: policy) and reducers (reducer name: task step name).

    A reducer named like another step of its workflow (in another flow: the check allows it)
    is left out: a completion of that name cannot be told apart from the other step's.
    """
    steps = list(every_step(workflow))
    joins: dict[str, str] = {
        step.name: step.join.policy
        for step in steps
        if step.join is not None and step.join.policy != "all"
    }
    names = {step.name for step in steps}
    reducers = {
        step.reduce.step: step.name
        for step in steps
        if step.reduce is not None and step.reduce.step not in names
    }
    return joins, reducers


class FanInCounters:
    """Joins met and batches reduced, in the manager's registry."""

    def __init__(self, registry: CollectorRegistry, workflows: Mapping[str, Workflow]) -> None:
        step = ["workflow", "step"]
        self._joins_met = Counter(
            f"{_P}joins_met",
            "Task steps whose join (min_success, first) was met: they completed without "
            "waiting for every child.",
            [*step, "policy"], registry=registry,
        )  # fmt: skip
        self._batches = Counter(
            f"{_P}reduce_batches",
            "Batches of a task step's children reduced (each a reply of its reducer).",
            step, registry=registry,
        )  # fmt: skip
        self._shapes = {name: _shapes(workflow) for name, workflow in workflows.items()}
        self._made: dict[tuple[int, ...] | tuple[Any, ...], Any] = {}

    def step_finished(self, command: StepFinished) -> None:
        """Count a join met or a batch reduced; other steps cost one dict lookup."""
        if command.outcome != "completed":
            return
        shapes = self._shapes.get(command.workflow)
        if shapes is None:
            return
        joins, reducers = shapes
        if (policy := joins.get(command.step)) is not None:
            self._child(self._joins_met, command.workflow, command.step, policy).inc()
        elif (task_step := reducers.get(command.step)) is not None:
            self._child(self._batches, command.workflow, task_step).inc()

    def _child(self, metric: Counter, *labels: str) -> Any:
        key = (id(metric), *labels)  # `labels()` takes a lock each call: each child made once
        child = self._made.get(key)
        if child is None:
            child = self._made[key] = metric.labels(*labels)
        return child
