"""Structural checks over the raw workflow data: duplicates, unknown names, cycles, recursion.

They read the plain data (not the models), so that they still run when some other part of
the file fails validation, and so that duplicates are seen before names become dict keys.
Malformed parts are skipped here: model validation reports those.

A workflow's `on_error` and `on_cancel` steps are checked like its main steps, each branch on
its own: a branch step depends only on steps of its branch, and no two steps share a name.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflow_manager.config.models import NAME_PATTERN
from workflow_manager.config.yamlsource import Path, Problem

__all__ = [
    "check_handlers",
    "check_document",
    "find_cycles",
    "mappings",
    "number_text",
    "quote",
    "suggest",
]

_MAX_LISTED = 12
_NAME = re.compile(NAME_PATTERN)
# A workflow's groups of steps: step names are unique across them (`<job>:<step>` is one step).
_GROUPS = ("steps", "on_error", "on_cancel")
_OWNERS = {"steps": "a step", "compensate": "a compensation", "fallback": "a fallback"}
# The fields that name a step of their own: (what it is called, why not on a branch step).
_HANDLERS = {
    "compensate": ("compensation", "so nothing would undo it"),
    "fallback": ("fallback", "with nothing left to recover"),
}
_LABELS = {"steps": "a main step", "on_error": "an on_error step", "on_cancel": "an on_cancel step"}


def number_text(value: float) -> str:
    """3 for 3.0, 0.5 for 0.5: how a person would write the number."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


def mappings(value: Any, path: Path = ("workflows",)) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The mappings of a raw list (`workflows`, `tasks`, `steps`), each with its path; other
    items and a value that is no list are left to model validation."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                yield (*path, index), item


def quote(value: str, limit: int = 60) -> str:
    """`value` in single quotes, shortened, escaped when it would break the one-line message."""
    short = value if len(value) <= limit else value[: limit - 3] + "..."
    return f"'{short}'" if short.isprintable() and "'" not in short else repr(short)


def suggest(word: str, choices: Iterable[str]) -> str:
    """'; did you mean 'x'?' for the closest of `choices`, or ''."""
    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {quote(by_lower[close[0]])}?" if close else ""


def listing(names: Sequence[str]) -> str:
    """Names joined by commas, the tail elided past a dozen."""
    shown = ", ".join(names[:_MAX_LISTED])
    return shown + (f", ... ({len(names) - _MAX_LISTED} more)" if len(names) > _MAX_LISTED else "")


def find_cycles(graph: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """Each cycle closed by a back edge of a depth-first walk, as (a, b, a) from its first node.

    Iterative, so that a long chain cannot hit Python's recursion limit."""
    order = {name: i for i, name in enumerate(graph)}
    done: set[str] = set()
    found: dict[tuple[str, ...], None] = {}
    for root in graph:
        if root in done:
            continue
        trail, pending = [root], [iter(graph[root])]
        while pending:
            nxt = next(pending[-1], None)
            if nxt is None:
                done.add(trail.pop())
                pending.pop()
            elif nxt in trail:
                loop = trail[trail.index(nxt) :]
                start = min(range(len(loop)), key=lambda i: order[loop[i]])
                loop = loop[start:] + loop[:start]
                found.setdefault((*loop, loop[0]), None)
            elif nxt not in done and nxt in graph:
                trail.append(nxt)
                pending.append(iter(graph[nxt]))
    return list(found)


def check_document(data: Any, lines: Mapping[Path, int]) -> list[Problem]:
    """Every structural problem in a whole workflow document."""
    if not isinstance(data, dict):
        return []  # validation reports the wrong top level
    workflows = data.get("workflows", [])
    if workflows == []:
        return [Problem((), "no workflows: add a 'workflows:' list with at least one workflow")]
    items = _entries(workflows, ("workflows",))
    problems = _duplicates(items, "workflow", lines)
    for path, workflow in items:
        problems += _check_workflow(path, workflow, lines)
    return problems


def _entries(value: Any, path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The mappings in list `value` with their paths; anything else is left to validation."""
    if not isinstance(value, list):
        return []
    return [((*path, i), item) for i, item in enumerate(value) if isinstance(item, dict)]


def _name(entry: Mapping[str, Any]) -> str | None:
    name = entry.get("name")
    return name if isinstance(name, str) else None


def _duplicates(
    items: list[tuple[Path, dict[str, Any]]], kind: str, lines: Mapping[Path, int]
) -> list[Problem]:
    first: dict[str, Path] = {}
    problems = []
    for path, entry in items:
        name = _name(entry)
        if name is None:
            continue
        if name in first:
            where = lines.get((*first[name], "name"), "?")
            message = f"duplicate {kind} name {quote(name)} (first at line {where})"
            problems.append(Problem((*path, "name"), message))
        else:
            first[name] = path
    return problems


def _check_workflow(
    path: Path, workflow: dict[str, Any], lines: Mapping[Path, int]
) -> list[Problem]:
    tasks = _entries(workflow.get("tasks"), (*path, "tasks"))
    problems = _duplicates(tasks, "task", lines)
    groups = {key: _entries(workflow.get(key), (*path, key)) for key in _GROUPS}
    for key, steps in groups.items():
        problems += _check_flow(steps, lines, key, _foreign(groups, key))
    problems += _shared_names(groups, lines)
    problems += check_handlers(groups, lines)
    for task_path, task in tasks:
        task_steps = _entries(task.get("steps"), (*task_path, "steps"))
        problems += _check_flow(task_steps, lines)
        problems += check_handlers({"steps": task_steps}, lines)
        problems += _check_item_keys(task_path, task)
    task_names = list(dict.fromkeys(name for _, task in tasks if (name := _name(task)) is not None))
    uses = [(path, workflow, key) for key in _GROUPS]
    uses += [(task_path, task, "steps") for task_path, task in tasks]
    problems += _unknown_tasks(uses, task_names)
    problems += _task_recursion(tasks)
    return problems


def _foreign(groups: Mapping[str, list[tuple[Path, dict[str, Any]]]], key: str) -> dict[str, str]:
    """Names of the workflow's steps outside group `key`, with the group each belongs to."""
    result: dict[str, str] = {}
    for other, steps in groups.items():
        if other != key:
            for _, step in steps:
                if (name := _name(step)) is not None:
                    result.setdefault(name, other)
    return result


def _shared_names(
    groups: Mapping[str, list[tuple[Path, dict[str, Any]]]], lines: Mapping[Path, int]
) -> list[Problem]:
    """A branch step named like a main step or a step of the other branch: `<job>:<step>` clash."""
    first: dict[str, tuple[str, Path]] = {}
    problems = []
    for key, steps in groups.items():
        for path, step in steps:
            if (name := _name(step)) is None:
                continue
            owner, where = first.setdefault(name, (key, path))
            if owner != key:
                message = (
                    f"step name {quote(name)} is already used by {_LABELS[owner]}"
                    f" (line {lines.get((*where, 'name'), '?')}); names must be unique across"
                    " steps, on_error and on_cancel, as replies find their step by name"
                )
                problems.append(Problem((*path, "name"), message))
    return problems


def _check_flow(
    steps: list[tuple[Path, dict[str, Any]]],
    lines: Mapping[Path, int],
    key: str = "steps",
    foreign: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Duplicates, bad dependencies and cycles among one group of steps (`key` names it)."""
    problems = _duplicates(steps, "step", lines)
    problems += [
        Problem(
            (*step_path, "http"),
            "a step has either 'task' (child jobs) or 'http' (a call through the bridge), not both",
        )
        for step_path, step in steps
        if step.get("task") is not None and step.get("http") is not None
    ]
    problems += [
        Problem(
            (*step_path, key),
            f"a step with 'wait: true' sends no request and is never retried, so '{key}' "
            "makes no sense with it (a 'timeout' may end the wait)",
        )
        for step_path, step in steps
        if step.get("wait") is True
        for key in _NOT_WITH_WAIT
        if step.get(key) is not None
    ]
    first: dict[str, Path] = {}
    for step_path, step in steps:
        if (name := _name(step)) is not None:
            first.setdefault(name, step_path)
    scope = _Scope(key, list(first), foreign or {})
    graph: dict[str, list[str]] = {name: [] for name in scope.known}
    for step_path, step in steps:
        name = _name(step)
        depends = step.get("depends")
        if name is None or not isinstance(depends, list):
            continue
        for parent, problem in _check_depends(step_path, name, depends, scope):
            if problem is not None:
                problems.append(problem)
            elif name not in graph[parent]:
                graph[parent].append(name)
    for cycle in find_cycles(graph):
        message = f"dependency cycle: {' -> '.join(cycle)} (each step needs the one before it)"
        problems.append(Problem((*first[cycle[0]], "depends"), message))
    return problems


# What a waiting step (wait: true) has no use for: it sends no request and is not retried
# (its signal is not checked against a schema, and it has no fallback).
_NOT_WITH_WAIT = (
    "queue", "task", "http", "retries", "retry_backoff", "compensate", "fallback",
    "input_schema", "output_schema", "concurrency",
)  # fmt: skip


@dataclass(frozen=True)
class _Scope:
    """The steps a dependency may name (`known`), and the workflow's others, by group."""

    key: str
    known: list[str]
    foreign: Mapping[str, str]

    def unknown(self, parent: str, name: str) -> str:
        """Why `parent` is no dependency `name` may have."""
        others = [other for other in self.known if other != name]
        if others:
            known_text = f"known: {listing(others)}"
        else:
            known_text = (
                "no other steps here" if self.key == "steps" else f"no other {self.key} steps"
            )
        if parent in self.foreign:
            rule = (
                "main steps cannot depend on on_error or on_cancel steps"
                if self.key == "steps"
                else f"{self.key} steps may depend only on other {self.key} steps"
            )
            label = _LABELS[self.foreign[parent]]
            return f"depends on {quote(parent)}, {label}: {rule} ({known_text})"
        message = f"depends on unknown step {quote(parent)} ({known_text})"
        return message + suggest(parent, others)


def _check_depends(
    path: Path, name: str, depends: list[Any], scope: _Scope
) -> Iterable[tuple[str, Problem | None]]:
    """Each usable dependency of one step as (parent, None), each bad one as (name, problem)."""
    seen: set[str] = set()
    for i, parent in enumerate(depends):
        if not isinstance(parent, str) or not _NAME.fullmatch(parent):
            continue  # validation reports it
        where = (*path, "depends", i)
        if parent == name:
            yield parent, Problem(where, f"depends on itself; remove {quote(name)} from depends")
        elif parent in seen:
            yield parent, Problem(where, f"lists {quote(parent)} twice in depends; keep one")
        elif parent not in scope.known:
            yield parent, Problem(where, scope.unknown(parent, name))
        else:
            yield parent, None
        seen.add(parent)


def check_handlers(
    groups: Mapping[str, list[tuple[Path, dict[str, Any]]]], lines: Mapping[Path, int]
) -> list[Problem]:
    """`compensate` and `fallback` only on main steps, each name unique among the flow's steps,
    compensations and fallbacks: their requests carry `<job>:<name>`, like the steps'."""
    taken = {name: (key, path) for key, steps in groups.items() for path, step in steps
             if (name := _name(step)) is not None}  # fmt: skip
    problems = []
    for key, steps in groups.items():
        for path, step in steps:
            for field in _HANDLERS:
                problems += _check_handler(field, key, path, step.get(field), taken, lines)
    return problems


def _check_handler(
    field: str,
    key: str,
    path: Path,
    spec: Any,
    taken: dict[str, tuple[str, Path]],
    lines: Mapping[Path, int],
) -> list[Problem]:
    """One step's `compensate` or `fallback` (`field`): where it may be, and its name."""
    if not isinstance(spec, dict):
        return []
    noun, why = _HANDLERS[field]
    if key != "steps":
        message = (
            f"{field} is for main steps: an {key} step runs after the job ended, "
            f"{why}; remove '{field}' here"
        )
        return [Problem((*path, field), message)]
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return []  # validation reports it
    if name not in taken:
        taken[name] = (field, (*path, field))
        return []
    owner, where = taken[name]
    what = f"another {noun}" if owner == field else _OWNERS.get(owner) or _LABELS[owner]
    message = (
        f"{noun} name {quote(name)} is already used by {what} (line "
        f"{lines.get((*where, 'name'), '?')}); give it a name of its own, as replies"
        f" find their step or {noun} by name"
    )
    return [Problem((*path, field, "name"), message)]


def _check_item_keys(path: Path, task: dict[str, Any]) -> list[Problem]:
    problems = []
    for key in ("itemListKey", "itemKey"):
        value = task.get(key)
        if isinstance(value, str) and value and not value.strip():
            problems.append(Problem((*path, key), f"{key} is blank; name a key of the input"))
    return problems


def _task_uses(flow: dict[str, Any], path: Path, key: str = "steps") -> list[tuple[Path, str, str]]:
    """(path of the `task` field, step name, task name) for each task step in `flow[key]`."""
    uses = []
    for step_path, step in _entries(flow.get(key), (*path, key)):
        task = step.get("task")
        if isinstance(task, str) and _NAME.fullmatch(task):
            uses.append(((*step_path, "task"), _name(step) or "?", task))
    return uses


def _unknown_tasks(
    flows: list[tuple[Path, dict[str, Any], str]], task_names: list[str]
) -> list[Problem]:
    known = f"(known: {listing(task_names)})" if task_names else "(this workflow defines no tasks)"
    problems = []
    for path, flow, key in flows:
        for where, _, task in _task_uses(flow, path, key):
            if task not in task_names:
                message = f"uses unknown task {quote(task)} {known}{suggest(task, task_names)}"
                problems.append(Problem(where, message))
    return problems


def _task_recursion(tasks: list[tuple[Path, dict[str, Any]]]) -> list[Problem]:
    """A task whose steps run itself, directly or through other tasks, would never finish."""
    graph: dict[str, list[str]] = {}
    via: dict[tuple[str, str], tuple[Path, str]] = {}  # (task, used task) -> (path, step name)
    for path, task in tasks:
        name = _name(task)
        if name is None or name in graph:
            continue
        graph[name] = []
        for where, step, used in _task_uses(task, path):
            if (name, used) not in via:
                via[(name, used)] = (where, step)
                graph[name].append(used)
    problems = []
    for cycle in find_cycles(graph):
        pairs = itertools.pairwise(cycle)
        hops = [f"task {quote(a)} step {quote(via[(a, b)][1])}" for a, b in pairs]
        chain = " -> ".join([*hops, f"task {quote(cycle[0])}"])
        message = f"task recursion: {chain}; a task cannot run itself"
        problems.append(Problem(via[(cycle[0], cycle[1])][0], message))
    return problems
