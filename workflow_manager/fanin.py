"""How a task step gathers its children, as the API, `watch` and the testing API show it: its
join (how many children it needs, how many succeeded, failed or are left) and its reduction
(batches and children reduced).

Pure, from the step's run alone (`workflow_manager.engine.joins`, `.reducing`): what the engine
holds is all there is, so every view agrees.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import StepRun, StepStatus
from workflow_manager.engine.fanin import batches_of, join_totals

__all__ = ["batches_of", "join_view", "reduce_view"]


def join_view(run: StepRun) -> dict[str, Any] | None:
    """A task step's join once it fanned out (`engine.fanin.join_totals`), and `met` once it
    completed (true) or failed (false). None for `join: all` and before it fanned out."""
    view = join_totals(run)
    if view is None:
        return None
    if run.status.is_done:
        view["met"] = True
    elif run.status is StepStatus.FAILED:
        view["met"] = False
    return view


def reduce_view(
    run: StepRun, reduced: int | None = None, batches: int | None = None
) -> dict[str, Any] | None:
    """A task step's reduction: the reducer `step`, `batch` size, `batches` and `reduced`
    (children whose results were reduced), and while it runs `pending` (results waiting for a
    batch) and `in_flight` (results in the batch the reducer has now).

    A step that ended no longer holds its reduction; `reduced` and `batches` then come from the
    caller (the job's journal rows: `workflow_manager.api.jobview`), else are left out.
    """
    reduce = run.spec.reduce
    if reduce is None or run.children is None:
        return None
    view: dict[str, Any] = {"step": reduce.step, "batch": reduce.batch}
    reduction = run.reduction
    if reduction is not None:
        view["batches"] = batches_of(reduction.reduced, reduce.batch)
        view["reduced"] = reduction.reduced
        view["pending"] = len(reduction.pending)
        view["in_flight"] = reduction.sending
        return view
    if batches is not None:
        view["batches"] = batches
    if reduced is not None:
        view["reduced"] = reduced
    return view
