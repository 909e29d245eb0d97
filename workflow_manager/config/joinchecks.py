"""Checks of task steps' `join:` against their task, over the raw workflow data.

Like workflow_manager.config.checks, they read the plain data, so that they run when another
part of the file fails validation; malformed entries are left to model validation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workflow_manager.config.checks import mappings, quote
from workflow_manager.config.yamlsource import Path, Problem

__all__ = ["check_joins"]

_GROUPS = ("steps", "on_error", "on_cancel")


def check_joins(data: Any) -> list[Problem]:
    """A `join: {min_success: ...}` step whose task sets `max_failed_items`: refused, as
    min_success already says how many children may fail (all but N)."""
    problems: list[Problem] = []
    for path, workflow in mappings(data.get("workflows") if isinstance(data, dict) else None):
        tasks = dict(_named(workflow.get("tasks")))
        for step_path, step in _task_steps(workflow, path, tasks):
            join, task = step.get("join"), tasks.get(str(step.get("task")))
            if not isinstance(join, dict) or join.get("min_success") is None or task is None:
                continue
            allowed = task.get("max_failed_items")
            if isinstance(allowed, int) and not isinstance(allowed, bool) and allowed > 0:
                problems.append(
                    Problem(
                        (*step_path, "join"),
                        f"join: min_success tolerates failed children itself (all but the "
                        f"successes it needs), and task {quote(str(step['task']))} sets "
                        f"max_failed_items: {allowed} as well; drop one of them (a task used "
                        "both ways can be written twice)",
                    )
                )
    return problems


def _named(value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    for _, item in mappings(value):
        if isinstance(item.get("name"), str):
            yield item["name"], item


def _task_steps(
    workflow: dict[str, Any], path: Path, tasks: dict[str, dict[str, Any]]
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every step of the workflow, its branches and its tasks, with its path."""
    for group in _GROUPS:
        yield from mappings(workflow.get(group), (*path, group))
    for task_path, task in mappings(workflow.get("tasks"), (*path, "tasks")):
        yield from mappings(task.get("steps"), (*task_path, "steps"))
