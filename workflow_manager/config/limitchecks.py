"""Checks of `limits:` over the raw workflow data, each with its YAML line.

Like workflow_manager.config.checks, they read the plain data, so that they run when another
part of the file fails validation; malformed entries are left to model validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workflow_manager.config.checks import quote, suggest
from workflow_manager.config.yamlsource import Path, Problem

__all__ = ["check_limits"]


def check_limits(data: Any, lines: Mapping[Path, int]) -> list[Problem]:
    """Problems of the raw document's `limits:`: a name given twice, an unknown workflow."""
    if not isinstance(data, dict) or not isinstance(data.get("limits"), list):
        return []
    workflows = data.get("workflows")
    known = [
        w["name"] for w in (workflows if isinstance(workflows, list) else [])
        if isinstance(w, dict) and isinstance(w.get("name"), str)
    ]  # fmt: skip
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for i, entry in enumerate(data["limits"]):
        if not isinstance(entry, dict):
            continue  # model validation reports it
        name = entry.get("name")
        if isinstance(name, str) and name in first:
            where = lines.get(("limits", first[name], "name"), "?")
            message = (
                f"duplicate limit name {quote(name)} (limit #{first[name] + 1}, line {where}, "
                f"and limit #{i + 1}); give each limit a name of its own"
            )
            problems.append(Problem(("limits", i, "name"), message))
        elif isinstance(name, str):
            first[name] = i
        names = entry.get("workflows")
        for j, workflow in enumerate(names if isinstance(names, list) else []):
            if isinstance(workflow, str) and workflow not in known:
                listed = ", ".join(known) if known else "none"
                problems.append(
                    Problem(
                        ("limits", i, "workflows"),  # not (..., j): that reads as workflow #j
                        f"workflows[{j}]: unknown workflow {quote(workflow)} (known: {listed})"
                        + suggest(workflow, known),
                    )
                )
    return problems
