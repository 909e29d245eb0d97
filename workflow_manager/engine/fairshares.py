"""Fair shares: a workflow with `fairness: {key, weight}` puts each job's held-back work in the
group of its key's value, so that work waiting for a limit goes round-robin across keys.

A part (`workflow_manager.engine.extension.Part`). The key and the weight are read once, at
submission, from the payload and the metadata (`meta.<field>`), like a unique key; a job's
children wait in their top-level job's group. The turns themselves are taken in
`workflow_manager.engine.fairness.WaitingLine`, which every limit's waiting work queues in.
"""

from __future__ import annotations

import json
import math
from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import MAX_FAIR_WEIGHT, Fairness, Workflow
from workflow_manager.engine.commands import JobRejected
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.fairness import FairShare
from workflow_manager.engine.metadata import key_data, key_json
from workflow_manager.engine.state import Job

__all__ = ["FairShares", "MIN_FAIR_WEIGHT", "fair_share"]

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
        weight = (
            fairness.weight_expression.search(data)
            if fairness.weight_expression is not None
            else None
        )
    except ExpressionError as exc:
        raise ShareError(str(exc)) from exc
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


class FairShares(Part):
    """Reading a new job's fairness key and weight; its held-back work waits under them."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with `fairness`."""
        return workflow.fairness is not None

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
