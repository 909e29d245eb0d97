"""A job's compensations as the API shows them: each step undone, by what, and how it went. Pure."""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import Job, StepStatus
from workflow_manager.textline import iso_utc

__all__ = ["COMPENSATION_STATUSES", "compensation_view"]

COMPENSATION_STATUSES = ("pending", "running", "retrying", "compensated", "failed")
_STATUS = {
    StepStatus.PENDING: "pending",
    StepStatus.RUNNING: "running",
    StepStatus.RETRYING: "retrying",
    StepStatus.COMPLETED: "compensated",
    StepStatus.FAILED: "failed",
}


def compensation_view(job: Job) -> dict[str, Any] | None:
    """`{"reason", "runs": [...]}` in the order they run, or None when the job undid nothing."""
    compensation = job.compensation
    if compensation is None:
        return None
    runs = []
    for comp in compensation.runs:
        entry: dict[str, Any] = {
            "job": comp.job_id,
            "step": comp.step,
            "name": comp.name,
            "queue": comp.spec.queue_name,
            "status": _STATUS[comp.status],
            "attempts": comp.attempt,
        }
        if comp.error is not None:
            entry["error"] = comp.error
        if comp.started_at is not None:
            entry["started_at"] = iso_utc(comp.started_at)
        if comp.finished_at is not None:
            entry["finished_at"] = iso_utc(comp.finished_at)
        runs.append(entry)
    return {"reason": compensation.reason, "runs": runs}
