"""Checks of `webhooks:` and `triggers:` over the raw workflow data, each with its YAML line.

Like workflow_manager.config.checks, they read the plain data, so that they run when another
part of the file fails validation; malformed entries are left to model validation.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.checks import quote, suggest
from workflow_manager.config.yamlsource import Problem

__all__ = ["check_triggers"]


def check_triggers(data: Any) -> list[Problem]:
    """Problems of the raw document: a webhook declared twice, a trigger naming none declared."""
    if not isinstance(data, dict):
        return []
    hooks = data.get("webhooks")
    names: list[str] = []
    problems: list[Problem] = []
    for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
        name = hook.get("name") if isinstance(hook, dict) else None
        if isinstance(name, str):
            if name in names:
                message = f"webhook {quote(name)} is declared twice; give each source one entry"
                problems.append(Problem(("webhooks", i, "name"), message))
            names.append(name)
    workflows = data.get("workflows")
    for i, workflow in enumerate(workflows if isinstance(workflows, list) else []):
        triggers = workflow.get("triggers") if isinstance(workflow, dict) else None
        for j, trigger in enumerate(triggers if isinstance(triggers, list) else []):
            hook = trigger.get("webhook") if isinstance(trigger, dict) else None
            if not isinstance(hook, str) or hook in names:
                continue
            known = (
                f"declared: {', '.join(names)}"
                if names
                else "none is declared; add it under 'webhooks:' at the top of the file"
            )
            problems.append(
                Problem(
                    ("workflows", i, "triggers", j, "webhook"),
                    f"triggers[{j}].webhook: unknown webhook {quote(hook)} ({known})"
                    + suggest(hook, names),
                )
            )
    return problems
