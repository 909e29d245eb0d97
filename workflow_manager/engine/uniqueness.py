"""Unique jobs: a workflow with `unique: {key}` runs at most one unfinished job per key value.

A part (`workflow_manager.engine.extension.Part`). The key is the workflow's
JMESPath expression over the payload, as canonical JSON (null counts as the key "null"). The
index (`EngineState.unique`) is derived from the jobs: a job holds its key from submission
(scheduled, queued or running) until it settles, so replaying the journal rebuilds it.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import JobDuplicate, JobRejected
from workflow_manager.engine.events import JobSubmitted
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.metadata import key_data, key_json
from workflow_manager.engine.state import EngineState, Job

__all__ = ["UniqueJobs", "key_taken", "unique_key"]


def unique_key(workflow: Workflow, payload: dict[str, Any]) -> str:
    """The key text of a payload: its value as canonical JSON. ExpressionError if it has none."""
    assert workflow.unique is not None  # only asked of workflows with `unique`
    value = workflow.unique.expression.search(payload)
    return key_json(value)


def key_taken(state: EngineState, workflow: str, key: str, job_id: str) -> str | None:
    """Why job `job_id` of `workflow` cannot take its unique `key` again (a retry): another
    unfinished job holds it; None when it is free."""
    holder = state.unique.get((workflow, key))
    if holder is None or holder == job_id:
        return None
    return (
        f"job {holder} has the unique key {key} of workflow '{workflow}' and has not ended;"
        f" retry job {job_id} once it has"
    )


class UniqueJobs(Part):
    """Refusing a submission whose key an unfinished job holds; holding and releasing keys."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with `unique`."""
        return workflow.unique is not None

    def submission_refused(self, work: Work, sub: Submission) -> bool:
        """True after refusing a duplicate of an unfinished job, or a key that cannot be read;
        else the key the new job will hold is noted on `sub`."""
        if sub.workflow.unique is None:
            return False
        sub.unique_key = self._claim(work, sub.workflow, sub.event)
        return sub.unique_key is None

    def job_created(self, work: Work, job: Job, sub: Submission) -> None:
        """The new job holds its key."""
        if sub.unique_key is not None:
            self._hold_key(work, job, sub.unique_key)

    def retry_refusal(self, work: Work, job: Job) -> str | None:
        """Why a failed job may not run again now: another job holds its key."""
        if job.unique_key is None:
            return None
        return key_taken(work.state, job.workflow.name, job.unique_key, job.id)

    def job_revived(self, work: Work, job: Job) -> None:
        """A retried job takes its key again (free: `retry_refusal`)."""
        if job.unique_key is not None:
            self._hold_key(work, job, job.unique_key)

    def job_settled(self, work: Work, job: Job) -> None:
        """A settled job lets go of its key."""
        if job.unique_key is not None:
            self._release_key(work, job)

    def _claim(self, work: Work, workflow: Workflow, event: JobSubmitted) -> str | None:
        """The key a new job of `workflow` will hold, or None after refusing the submission."""
        try:
            key = unique_key(workflow, key_data(event.payload, event.meta))
        except ExpressionError as exc:
            reason = f"unique.key of workflow '{workflow.name}': {exc}"
            work.commands.append(JobRejected(event.job_id, event.workflow, reason, event.reply_to))
            return None
        holder = work.state.unique.get((workflow.name, key))
        if holder is not None:
            work.commands.append(
                JobDuplicate(event.job_id, workflow.name, holder, key, event.reply_to)
            )
            return None
        return key

    def _hold_key(self, work: Work, job: Job, key: str) -> None:
        """`job` holds `key` until it settles (a retried job takes it again if it is free)."""
        job.unique_key = key
        work.state.unique.setdefault((job.workflow.name, key), job.id)

    def _release_key(self, work: Work, job: Job) -> None:
        """A job that held a key settled: another job of that key may start now."""
        index = (job.workflow.name, job.unique_key or "")
        if work.state.unique.get(index) == job.id:
            del work.state.unique[index]
