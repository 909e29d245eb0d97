"""Where a new top-level job is placed, when jobs are split into partitions (pure).

A job of a workflow with a `concurrency` limit is placed by the limit's scope (its key's value,
or the workflow alone without a key), else one with `unique` by its unique key, else one with
`debounce` by its debounce key, else by its own id. Jobs that a limit or a key compares thus
share a partition, so the one manager running it decides every rule about that key. The scope
and keys are the engine's own (`concurrency_scope`, `unique_key`, `debounce_key`), so placement
and the engine's rules cannot disagree. (With a limit or unique key too, a debounce holds
cluster-wide when that key is read from the debounce key's value: triggers are placed by the
other key.)
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import Workflow
from workflow_manager.engine.admission import concurrency_scope
from workflow_manager.engine.debouncing import debounce_key
from workflow_manager.engine.metadata import key_data
from workflow_manager.engine.uniqueness import unique_key

__all__ = ["placement_key"]


def placement_key(
    workflow: Workflow | None, payload: Any, meta: dict[str, Any] | None
) -> str | None:
    """The text a new top-level job of `workflow` is placed by; None: place it by its id.

    None too when the key cannot be computed (no such workflow, a payload that is no object,
    a unique or debounce key that cannot be read): the engine rejects such a submission
    wherever it runs.
    """
    if workflow is None or not isinstance(payload, dict):
        return None
    data = key_data(payload, meta)
    if workflow.concurrency is not None:
        return concurrency_scope(workflow, data)
    try:
        if workflow.unique is not None:
            return f"unique:{workflow.name}:{unique_key(workflow, data)}"
        if workflow.debounce is not None:
            return f"debounce:{workflow.name}:{debounce_key(workflow, data)}"
    except ExpressionError:
        return None
    return None
