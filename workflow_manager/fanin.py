"""How a task step gathers its children, as the API, `watch` and the testing API show it: its
join (how many children it needs, how many succeeded, failed or are left) and its reduction
(batches and children reduced).

Pure, from the step's run alone (`workflow_manager.engine.joins`, `.reducing`): what the engine
holds is all there is, so every view agrees.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import StepRun, StepStatus

__all__ = ["batches_of", "join_view", "reduce_view"]


def join_view(run: StepRun) -> dict[str, Any] | None:
    """A task step's join once it fanned out: `policy` (as the file writes it), `needed`,
    `succeeded`, `failed`, `left` (not finished), `then`, and `met` once it completed.

    None for `join: all` (it waits for every child: the children's counts say it all), and
    before the step fanned out.
    """
    join = run.spec.join
    if join is None or join.policy == "all" or run.children is None:
        return None
    total = len(run.children)
    failed = len(run.failed_items or ())
    view: dict[str, Any] = {
        "policy": join.text,
        "needed": join.needed(total),
        "succeeded": total - run.children_left - failed,
        "failed": failed,
        "left": run.children_left,
        "then": join.then,
    }
    told = run.output.get("join") if run.output is not None else None
    if isinstance(told, dict):
        # The step's output says which elements succeeded, failed or had not finished when
        # the join was met: that, not what happened after (`then: finish` children go on).
        view["succeeded"] = len(told.get("succeeded") or ())
        view["failed"] = len(told.get("failed") or ())
        view["left"] = len(told.get("unfinished") or ())
    if run.status.is_done:
        view["met"] = True
    elif run.status is StepStatus.FAILED:
        view["met"] = False
    return view


def batches_of(reduced: int, batch: int) -> int:
    """How many batches reduced `reduced` children: every batch but the last is full."""
    return -(-reduced // batch) if batch > 0 else 0


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
