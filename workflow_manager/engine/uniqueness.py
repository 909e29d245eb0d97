"""Unique jobs: a workflow with `unique: {key}` runs at most one unfinished job per key value.

A part of the engine's `Transition` (see `workflow_manager.engine.work`). The key is the workflow's
JMESPath expression over the payload, as canonical JSON (null counts as the key "null"). The
index (`EngineState.unique`) is derived from the jobs: a job holds its key from submission
(scheduled, queued or running) until it settles, so replaying the journal rebuilds it.
"""

from __future__ import annotations

import json
from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import JobDuplicate, JobRejected
from workflow_manager.engine.events import JobSubmitted
from workflow_manager.engine.metadata import key_data
from workflow_manager.engine.state import Job
from workflow_manager.engine.work import Work

__all__ = ["UniqueJobs", "unique_key"]


def unique_key(workflow: Workflow, payload: dict[str, Any]) -> str:
    """The key text of a payload: its value as canonical JSON. ExpressionError if it has none."""
    assert workflow.unique is not None  # only asked of workflows with `unique`
    value = workflow.unique.expression.search(payload)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class UniqueJobs:
    """Refusing a submission whose key an unfinished job holds; holding and releasing keys."""

    def _claim(self: Work, workflow: Workflow, event: JobSubmitted) -> str | None:
        """The key a new job of `workflow` will hold, or None after refusing the submission."""
        try:
            key = unique_key(workflow, key_data(event.payload, event.meta))
        except ExpressionError as exc:
            reason = f"unique.key of workflow '{workflow.name}': {exc}"
            self.commands.append(JobRejected(event.job_id, event.workflow, reason, event.reply_to))
            return None
        holder = self.state.unique.get((workflow.name, key))
        if holder is not None:
            self.commands.append(
                JobDuplicate(event.job_id, workflow.name, holder, key, event.reply_to)
            )
            return None
        return key

    def _hold_key(self: Work, job: Job, key: str) -> None:
        """`job` holds `key` until it settles (a retried job takes it again if it is free)."""
        job.unique_key = key
        self.state.unique.setdefault((job.workflow.name, key), job.id)

    def _release_key(self: Work, job: Job) -> None:
        """A job that held a key settled: another job of that key may start now."""
        index = (job.workflow.name, job.unique_key or "")
        if self.state.unique.get(index) == job.id:
            del self.state.unique[index]
