"""Task steps: splitting a list into child jobs, and gathering their results back. Pure."""

from __future__ import annotations

import uuid
from typing import Any

from manager.config.models import Task
from manager.engine.jsontext import json_type

__all__ = ["FanOutError", "item_list", "child_ids", "child_payload", "gather"]


class FanOutError(Exception):
    """A task step cannot fan out; the message is the step's error, written for the user."""


def item_list(task: Task, step: str, data: dict[str, Any]) -> list[Any]:
    """The list a task step fans out over, or a FanOutError naming key, step and what was found."""
    key = task.item_list_key
    if key not in data:
        keys = ", ".join(sorted(data)) or "none"
        raise FanOutError(
            f"task step '{step}' needs a list at key '{key}' of its input (itemListKey of task "
            f"'{task.name}'), but the input has no such key (keys: {keys})"
        )
    items = data[key]
    if not isinstance(items, list):
        raise FanOutError(
            f"task step '{step}' needs a list at key '{key}' of its input (itemListKey of task "
            f"'{task.name}'), but found {json_type(items)}"
        )
    return items


def _element_id(element: Any) -> str | None:
    if isinstance(element, dict) and isinstance(element.get("id"), str):
        try:
            return str(uuid.UUID(element["id"]))
        except ValueError:
            return None
    return None


def child_ids(parent_id: str, step: str, items: list[Any]) -> list[str]:
    """One job id per element: the element's own UUID `id`, else uuid5(parent, "step/index")."""
    namespace = uuid.UUID(parent_id)
    ids: list[str] = []
    first_index: dict[str, int] = {}
    for index, element in enumerate(items):
        child = _element_id(element) or str(uuid.uuid5(namespace, f"{step}/{index}"))
        if child in first_index:
            raise FanOutError(
                f"task step '{step}': elements {first_index[child]} and {index} have the same "
                f"id {child}; each element needs its own id"
            )
        first_index[child] = index
        ids.append(child)
    return ids


def child_payload(task: Task, data: dict[str, Any], element: Any) -> dict[str, Any]:
    """A child's payload: the step input without the list, plus the element under the item key."""
    payload = {k: v for k, v in data.items() if k != task.item_list_key}
    payload[task.item_key] = element
    return payload


def gather(task: Task, results: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The task step's output: children's other keys (first child wins) plus the gathered list."""
    output: dict[str, Any] = {}
    item_key = task.item_key
    for result in results:
        for key, value in (result or {}).items():
            if key != item_key and key not in output:
                output[key] = value
    output[task.item_list_key] = [(r or {}).get(item_key) for r in results]
    return output
