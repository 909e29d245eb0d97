"""Conditional steps: a step's `when` decides, over its input, whether it runs or is skipped.

A part of the engine's `Transition` (see `workflow_manager.engine.work`). A skipped step sends no
request; its output is `{}` and its dependents go on as if it had completed. An expression
that cannot be evaluated over the input (a function given the wrong type) fails the step.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.engine.state import Job, StepRun, StepStatus
from workflow_manager.engine.work import Work

__all__ = ["ConditionRules"]


class ConditionRules:
    """The `when` of a step that is ready to start."""

    def _skipped(self: Work, job: Job, run: StepRun, data: dict[str, Any]) -> bool:
        """True when the step does not run now: skipped by its `when`, or failed evaluating it."""
        condition = run.spec.condition
        if condition is None:
            return False
        try:
            holds = condition.holds(data)
        except ExpressionError as exc:
            self._fail_step(job, run, f"step '{run.name}': when {exc}")
            return True
        if holds:
            return False
        self._complete_step(job, run, {}, StepStatus.SKIPPED)
        return True
