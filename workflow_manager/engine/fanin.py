"""A task step's totals, for events (`StepFinished.fan_in`) and every view of a job: its join's
(how many children it needed, succeeded, failed, were left) and its reduction's (batches,
children reduced). Pure; counts only, never a result."""

from __future__ import annotations

from typing import Any

from workflow_manager.engine.state import StepRun

__all__ = ["batches_of", "fan_in_totals", "join_totals"]


def batches_of(reduced: int, batch: int) -> int:
    """How many batches reduced `reduced` children: every batch but the last is full."""
    return -(-reduced // batch) if batch > 0 else 0


def join_totals(run: StepRun) -> dict[str, Any] | None:
    """A task step's join once it fanned out: `policy` (as the file writes it), `needed`,
    `succeeded`, `failed`, `left` (not finished) and `then`; None for `join: all` (the
    children's counts say it all) and before it fanned out."""
    join = run.spec.join
    if join is None or join.policy == "all" or run.children is None:
        return None
    total = len(run.children)
    failed = len(run.failed_items or ())
    counts = {"succeeded": total - run.children_left - failed, "failed": failed,
              "left": run.children_left}  # fmt: skip
    told = run.output.get("join") if run.output is not None else None
    if isinstance(told, dict):
        # The step's output says which elements succeeded, failed or had not finished when the
        # join was met: that, not what happened after (`then: finish` children go on).
        counts = {
            "succeeded": len(told.get("succeeded") or ()),
            "failed": len(told.get("failed") or ()),
            "left": len(told.get("unfinished") or ()),
        }
    return {"policy": join.text, "needed": join.needed(total), **counts, "then": join.then}


def fan_in_totals(run: StepRun) -> dict[str, Any] | None:
    """`{"join": {...}, "reduce": {...}}` for a task step with a join (min_success, first) or
    `reduce` that fanned out; None for any other step."""
    totals: dict[str, Any] = {}
    if (join := join_totals(run)) is not None:
        totals["join"] = join
    reduce, reduction = run.spec.reduce, run.reduction
    if reduce is not None and reduction is not None:
        reduced = reduction.reduced
        totals["reduce"] = {"batches": batches_of(reduced, reduce.batch), "reduced": reduced}
    return totals or None
