"""Pydantic models of the HTTP API's responses, for validation and the OpenAPI docs.

Paths and field names follow the older Go tool's API (hence `startTime` and `job_count`
side by side); fields marked "extra" are additions it did not have.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from manager.engine import JobStatus

__all__ = [
    "ErrorBody",
    "Health",
    "JobDetail",
    "JobIds",
    "Progress",
    "StepEntry",
    "SubmitResponse",
    "WorkflowJobs",
    "WorkflowSummary",
]


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: one sentence saying what was wrong and how to fix it."""

    error: str = Field(examples=["no job 3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"])


class WorkflowSummary(BaseModel):
    """One workflow (one entry per vhost when it lists vhosts) and its running top-level jobs."""

    vhost: str = Field(description='The vhost, or "" when the workflow lists none.')
    name: str
    job_count: int = Field(description="Top-level jobs of this workflow now running.")


class SubmitResponse(BaseModel):
    """The id of the job just started."""

    id: str = Field(examples=["3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"])


class WorkflowJobs(BaseModel):
    """Top-level jobs of one workflow: running ones, and those that finished within the interval."""

    running: list[str]
    completed: list[str] = Field(description="Finished with status completed.")
    failed: list[str] = Field(description="Extra: finished with status failed or cancelled.")


class JobIds(BaseModel):
    """Ids of every running job, child jobs included."""

    jobs: list[str]


class StepEntry(BaseModel):
    """One step of a job, or one of the pseudo-steps `__start__` and `__end__`."""

    name: str
    startTime: str = Field(description="ISO-8601 UTC, e.g. 2024-05-01T12:00:00.000Z.")
    elapsed: float = Field(description="Seconds: to now while running, else to when it ended.")
    tasks: list[str] | None = Field(
        default=None, description="Task steps that have fanned out: the child job ids."
    )
    tasks_done: int | None = Field(default=None, description="Extra: running task steps only.")
    tasks_total: int | None = Field(default=None, description="Extra: running task steps only.")
    message: dict[str, Any] | str | None = Field(
        default=None,
        description="Output of a completed step, error text of a failed one; the payload "
        "for __start__, the result for __end__.",
    )
    attempt: int | None = Field(default=None, description="Extra: the attempt, when past 1.")
    retrying: bool | None = Field(
        default=None, description="Extra: an attempt failed and the retry wait is running."
    )
    lastError: str | None = Field(default=None, description="Extra: why the last attempt failed.")
    branch: str | None = Field(
        default=None, description="Extra: on_error or on_cancel, for the steps of a branch."
    )


class Progress(BaseModel):
    """Extra: how far a job has got, for progress lines."""

    steps_done: int = Field(description="Steps completed.")
    steps_total: int
    children_done: int = Field(description="Child jobs finished, over the task steps fanned out.")
    children_total: int


class JobDetail(BaseModel):
    """A job or child job: its steps by state, and its result or error once it has ended."""

    uuid: str
    workflow: str = Field(description="The top-level workflow's name, for child jobs too.")
    task: str | None = Field(default=None, description="Extra, child jobs only: the task's name.")
    parent: str | None = Field(default=None, description="Extra, child jobs only: the parent id.")
    status: JobStatus
    running: list[StepEntry]
    completed: list[StepEntry] = Field(
        description="Starts with __start__; ends with __end__ once the job has completed."
    )
    failed: list[StepEntry] = Field(description="Extra: steps that failed.")
    progress: Progress
    trace_id: str = Field(
        description="Extra: the W3C trace id (32 hex digits) of the job, its children's too."
    )
    result: dict[str, Any] | None = Field(default=None, description="Once completed.")
    error: dict[str, Any] | None = Field(
        default=None, description='Once failed or cancelled: {"step": ..., "message": ...}.'
    )


class Health(BaseModel):
    """Whether the manager is connected to RabbitMQ; `since`: seconds it has been disconnected."""

    status: Literal["ok", "disconnected"]
    since: float | None = Field(default=None, description="Seconds since the connection was lost.")


class Readiness(BaseModel):
    """Whether the manager can take work now, and if not, why."""

    status: Literal["ready", "not-ready"]
    reasons: list[str] = Field(default_factory=list)
