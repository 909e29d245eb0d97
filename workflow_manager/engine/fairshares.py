"""Fair shares: a workflow with `fairness: {key, weight}` puts each job's held-back work in the
group of its key's value, so that work waiting for a limit goes round-robin across keys.

A part (`workflow_manager.engine.extension.Part`). The key and the weight are read once, at
submission, from the payload and the metadata (`meta.<field>`), like a unique key; a job's
children wait in their top-level job's group. A step with its own `fairness` (beside its
`concurrency` or `rate`) puts its waiting dispatches in the group of its key instead, read
over the step's input and `meta.<field>` at each dispatch, like its `rate.key`
(`step_share`). The turns themselves are taken in
`workflow_manager.engine.fairness.WaitingLine`, which every limit's waiting work queues in.
"""

from __future__ import annotations

import json
import math
from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import MAX_FAIR_WEIGHT, Fairness, Workflow
from workflow_manager.engine.commands import JobRejected
from workflow_manager.engine.extension import Part, Submission, Work, every_step
from workflow_manager.engine.fairness import FairShare
from workflow_manager.engine.metadata import job_meta, key_data, key_json
from workflow_manager.engine.state import EngineState, Job, StepRun

__all__ = ["FairShares", "MIN_FAIR_WEIGHT", "fair_share", "step_share"]

MIN_FAIR_WEIGHT = 0.001
"""The smallest `fairness.weight` a job may have."""


class ShareError(ValueError):
    """A job's fairness key or weight cannot be read from its payload."""


def fair_share(fairness: Fairness, data: dict[str, Any]) -> FairShare:
    """The group and weight of a job reading `data` (payload, and metadata under `meta`).

    The key's value as canonical JSON (a key that finds nothing is the key `null`); the
    weight is 1 when the expression finds nothing. ShareError when either cannot be read or
    the weight is not a number from 0.001 to 1000.
    """
    try:
        group = fairness.expression.search(data)
    except ExpressionError as exc:
        raise ShareError(f"key {exc}") from exc
    try:
        weight = (
            fairness.weight_expression.search(data)
            if fairness.weight_expression is not None
            else None
        )
    except ExpressionError as exc:
        raise ShareError(f"weight {exc}") from exc
    if weight is None:
        weight = 1.0
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or not math.isfinite(weight)
        or not MIN_FAIR_WEIGHT <= weight <= MAX_FAIR_WEIGHT
    ):
        found = json.dumps(weight, default=str)[:80]
        raise ShareError(
            f"weight {fairness.weight!r} gave {found}; it must be a number from "
            f"{MIN_FAIR_WEIGHT:g} to {MAX_FAIR_WEIGHT:g}"
        )
    return FairShare(key_json(group), float(weight))


def step_share(state: EngineState, job: Job, run: StepRun) -> FairShare:
    """The group and weight a step's dispatch waits under for the step's own limits: with
    the step's `fairness`, its key and weight over the step's input and the job's metadata
    (`meta.<field>`); else its job's share (the workflow's `fairness`, or one group).

    A step whose share cannot be read is failed before it waits (`FairShares.dispatch_held`);
    should it become unreadable while the step waits (its metadata patched since), the
    dispatch goes on in the null key's group, weight 1.
    """
    fairness = run.spec.fairness
    if fairness is None:
        return job.share
    try:
        return fair_share(fairness, _step_data(state, job, run))
    except ShareError:
        return FairShare(key_json(None))


def _step_data(state: EngineState, job: Job, run: StepRun) -> dict[str, Any]:
    """What a step's keys read: its input, and its job's metadata under `meta`."""
    return key_data(run.input or {}, job_meta(state, job))


class FairShares(Part):
    """Reading a new job's fairness key and weight; its held-back work waits under them."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with `fairness`, on the workflow or on a step."""
        return workflow.fairness is not None or any(
            step.fairness is not None for step in every_step(workflow)
        )

    def submission_refused(self, work: Work, sub: Submission) -> bool:
        """True after refusing a job whose weight (or key) cannot be read; else its share is
        noted on `sub`."""
        fairness = sub.workflow.fairness
        if fairness is None:
            return False
        event = sub.event
        try:
            sub.share = fair_share(fairness, key_data(event.payload, event.meta))
        except ShareError as exc:
            reason = f"fairness of workflow '{sub.workflow.name}': {exc}"
            work.commands.append(JobRejected(event.job_id, event.workflow, reason, event.reply_to))
            return True
        return False

    def job_created(self, work: Work, job: Job, sub: Submission) -> None:
        """The new job's held-back work waits in its group (its children's too)."""
        job.share = sub.share

    def dispatch_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """True after failing a step whose own fairness key or weight cannot be read (before
        its concurrency or rate holds it back)."""
        fairness = run.spec.fairness
        if fairness is None:
            return False
        try:
            fair_share(fairness, _step_data(work.state, job, run))
        except ShareError as exc:
            work.fail_step(job, run, f"step '{run.name}': fairness {exc}")
            return True
        return False
