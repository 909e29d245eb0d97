"""Task steps: splitting a list into child jobs, and gathering their results back. Pure."""

from __future__ import annotations

import uuid
from collections.abc import Container
from typing import TYPE_CHECKING, Any

from workflow_manager.engine import jsontext
from workflow_manager.engine.childids import ChildIds
from workflow_manager.engine.jsontext import json_type

if TYPE_CHECKING:  # annotations only: `limits` reads this module for the command line's help
    from workflow_manager.config.models import Task

__all__ = [
    "DEFAULT_MAX_FANOUT_BYTES",
    "FanOutError",
    "item_list",
    "child_ids",
    "child_payload",
    "copies_problem",
    "gather",
]

DEFAULT_MAX_FANOUT_BYTES = 64 * 1024 * 1024
"""The most bytes of input a fan-out may copy into its children (serve --max-fanout-bytes;
`workflow_manager.limits` takes its default from here)."""

_KEYS_SHOWN = 5


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


def child_ids(
    parent_id: str,
    step: str,
    items: list[Any],
    jobs: Container[str],
    at_once: list[str] | None = None,
) -> ChildIds:
    """One job id per element: the element's own UUID `id`, else uuid5(parent, "step/index").

    FanOutError when two elements have the same id, or (else) when one's id is a job already
    (in `jobs`). Derived ids are checked as they are made, and not kept (`ChildIds`); the first
    `len(at_once)` of them are written into `at_once` (each is made once, for the children that
    start at once: the cost of a fan-out of small jobs, and of replaying one).
    """
    # The elements' own ids first: only they can meet each other (derived ids are distinct).
    own: dict[str, int] = {}
    for index, element in enumerate(items):
        if (child := _element_id(element)) is not None:
            if child in own:
                raise FanOutError(_same_id(step, own[child], index, child))
            own[child] = index
    ids = ChildIds(parent_id, step, len(items))
    taken: int | None = None
    for index, element in enumerate(items):
        child = _element_id(element)
        if child is None:
            child = ids.derived(index)
            if child in own:
                first, second = sorted((own[child], index))
                raise FanOutError(_same_id(step, first, second, child))
        else:
            ids[index] = child
        if taken is None and child in jobs:
            taken = index
        if at_once is not None and index < len(at_once):
            at_once[index] = child
    if taken is not None:
        raise FanOutError(f"task step '{step}': element {taken} has id {ids[taken]}, already a job")
    return ids


def _same_id(step: str, first: int, second: int, child: str) -> str:
    return (
        f"task step '{step}': elements {first} and {second} have the same id {child}; each "
        "element needs its own id"
    )


def child_payload(task: Task, data: dict[str, Any], element: Any) -> dict[str, Any]:
    """A child's payload: the step input without the list, plus the element under the item key."""
    payload = {k: v for k, v in data.items() if k != task.item_list_key}
    payload[task.item_key] = element
    return payload


def copies_problem(
    task: Task, step: str, data: dict[str, Any], children: int, limit: int
) -> str | None:
    """Why a fan-out of `children` may not start: every child's payload would copy the step's
    other keys, and all those copies together pass `limit` bytes. None when within it.

    The other keys are encoded once, here: their size is what each child's request and journal
    rows repeat. A fan-out with no children, or no other keys, costs nothing to check.
    """
    # The element replaces a key of the item key's name: that one is not copied.
    own = (task.item_list_key, task.item_key)
    shared = {k: v for k, v in data.items() if k not in own}
    if not children or not shared:
        return None
    each = _encoded_bytes(shared)
    total = each * children
    if total <= limit:
        return None
    keys = sorted(shared)
    named = ", ".join(repr(k) for k in keys[:_KEYS_SHOWN])
    if len(keys) > _KEYS_SHOWN:
        named += f" and {len(keys) - _KEYS_SHOWN} more"
    return (
        f"task step '{step}': a fan-out of {children:,} children would copy {total:,} bytes of "
        f"input (each child gets the step's other keys, {named}: {each:,} bytes); the limit is "
        f"{limit:,} (--max-fanout-bytes). Pass large shared data by reference (a payload "
        f"store, --payload-store, stores it for you) or raise the limit"
    )


def _encoded_bytes(value: dict[str, Any]) -> int:
    """The size of `value` as the journal and the requests write it (compact UTF-8 JSON)."""
    return len(jsontext.dumps(value))


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
