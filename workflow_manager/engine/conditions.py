"""Conditional steps: a step's `when` decides, over its input, whether it runs or is skipped.

A part (`workflow_manager.engine.extension.Part`). A skipped step sends no request; its output is
`{}` and its dependents go on as if it had completed. An expression that cannot be evaluated
over the input (a function given the wrong type) fails the step.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import Workflow
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.state import Job, StepRun, StepStatus

__all__ = ["Conditions"]


class Conditions(Part):
    """The `when` of a step that is ready to start."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a step that has a `when`."""
        return any(step.when is not None for step in every_step(workflow))

    def step_starting_held(self, work: Work, job: Job, run: StepRun, data: dict[str, Any]) -> bool:
        """True when the step does not run now: skipped by its `when`, or failed evaluating it."""
        if run.spec.when is None:
            return False
        condition = run.spec.condition
        assert condition is not None  # compiled from `when`
        try:
            holds = condition.holds(data)
        except ExpressionError as exc:
            work.fail_step(job, run, f"step '{run.name}': when {exc}")
            return True
        if holds:
            return False
        work.complete_step(job, run, {}, StepStatus.SKIPPED)
        return True
