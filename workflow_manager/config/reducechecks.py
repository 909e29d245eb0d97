"""Checks of task steps' `reduce:` over the raw workflow data: a reducer's name must be free.

Like workflow_manager.config.checks, they read the plain data, so that they run when another
part of the file fails validation; malformed entries are left to model validation.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.checks import mappings, quote
from workflow_manager.config.yamlsource import Path, Problem

__all__ = ["check_reduces"]


def check_reduces(data: Any) -> list[Problem]:
    """A reducer named like a step it shares a job with (a step, a fallback, a compensation
    or another reducer of the same flow; for a workflow, its on_error/on_cancel steps too):
    refused, as its replies would answer that step."""
    problems: list[Problem] = []
    for path, workflow in mappings(data.get("workflows") if isinstance(data, dict) else None):
        flows: list[tuple[Path, tuple[str, ...], dict[str, Any]]] = [
            (path, ("steps", "on_error", "on_cancel"), workflow)
        ]
        flows += [
            (p, ("steps",), task) for p, task in mappings(workflow.get("tasks"), (*path, "tasks"))
        ]
        for flow_path, groups, flow in flows:
            problems += _flow_problems(flow_path, groups, flow)
    return problems


def _flow_problems(path: Path, groups: tuple[str, ...], flow: dict[str, Any]) -> list[Problem]:
    steps = [
        (step_path, step)
        for group in groups
        for step_path, step in mappings(flow.get(group), (*path, group))
    ]
    taken: set[str] = set()
    for _, step in steps:
        if isinstance(step.get("name"), str):
            taken.add(step["name"])
        for handler in ("fallback", "compensate"):
            value = step.get(handler)
            if isinstance(value, dict) and isinstance(value.get("name"), str):
                taken.add(value["name"])
    problems: list[Problem] = []
    for step_path, step in steps:
        reduce = step.get("reduce")
        name = reduce.get("step") if isinstance(reduce, dict) else None
        if not isinstance(name, str):
            continue
        if name in taken:
            problems.append(
                Problem(
                    (*step_path, "reduce", "step"),
                    f"reducer {quote(name)} has the name of a step (or fallback, compensation "
                    "or reducer) of the same flow; its replies would answer that step. Give "
                    "the reducer a name of its own (queue: sets where its requests go)",
                )
            )
        taken.add(name)
    return problems
