"""A task step's totals when it ends, for events (`StepFinished.fan_in`): its join's (how many
children it needed, succeeded, failed, were left) and its reduction's (batches, children
reduced). Pure; counts only, never a result."""

from __future__ import annotations

from typing import Any

from workflow_manager.engine.state import StepRun

__all__ = ["fan_in_totals"]


def fan_in_totals(run: StepRun) -> dict[str, Any] | None:
    """`{"join": {...}, "reduce": {...}}` for a task step with a join (min_success, first) or
    `reduce` that fanned out; None for any other step."""
    totals: dict[str, Any] = {}
    join = run.spec.join
    if join is not None and join.policy != "all" and run.children is not None:
        total = len(run.children)
        failed = len(run.failed_items or ())
        counts = {
            "succeeded": total - run.children_left - failed,
            "failed": failed,
            "left": run.children_left,
        }
        told = run.output.get("join") if run.output is not None else None
        if isinstance(told, dict):  # which elements the step's output says, when it has it
            counts = {
                "succeeded": len(told.get("succeeded") or ()),
                "failed": len(told.get("failed") or ()),
                "left": len(told.get("unfinished") or ()),
            }
        totals["join"] = {
            "policy": join.text, "needed": join.needed(total), **counts, "then": join.then,
        }  # fmt: skip
    reduce, reduction = run.spec.reduce, run.reduction
    if reduce is not None and reduction is not None:
        batches = -(-reduction.reduced // reduce.batch)  # every batch but the last is full
        totals["reduce"] = {"batches": batches, "reduced": reduction.reduced}
    return totals or None
