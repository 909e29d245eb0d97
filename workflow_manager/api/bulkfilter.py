"""The filter of a bulk action (`POST /api/jobs/bulk`'s `filter`): which top-level jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, field_validator

from workflow_manager.api.models import JobStatusName
from workflow_manager.bulkactions import JobFilter

__all__ = ["BulkFilter", "When"]

# A time: unix seconds, or an RFC 3339 string (strict: "123" is neither).
When = StrictFloat | StrictInt | Annotated[str, Field(json_schema_extra={"format": "date-time"})]
_WHEN = "Unix seconds or RFC 3339 (e.g. 2026-11-28T09:00:00Z)."


class BulkFilter(BaseModel):
    """Which top-level jobs: those matching every criterion given ({} matches every job)."""

    model_config = ConfigDict(extra="forbid")

    workflow: str | None = Field(default=None, description="The workflow's name.")
    status: JobStatusName | list[JobStatusName] | None = Field(
        default=None, description="One status or several (paused: a running job paused)."
    )
    submitted_after: When | None = Field(
        default=None, description=f"Submitted at or after this time. {_WHEN}"
    )
    submitted_before: When | None = Field(
        default=None, description=f"Submitted before this time. {_WHEN}"
    )
    id_prefix: str | None = Field(
        default=None, pattern=r"^[0-9a-fA-F-]{1,36}$", description="The job id starts with it."
    )
    meta: dict[str, Any] | None = Field(
        default=None, description="Metadata keys the job must have, with these values."
    )

    @field_validator("submitted_after", "submitted_before", mode="after")
    @classmethod
    def _a_time(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str):
            return _rfc3339(value)
        return value

    def criteria(self) -> JobFilter:
        """The filter as the manager evaluates it."""
        status = self.status
        statuses = tuple(status) if isinstance(status, list) else (status,) if status else ()
        return JobFilter(
            workflow=self.workflow,
            statuses=statuses,
            submitted_after=_seconds(self.submitted_after),
            submitted_before=_seconds(self.submitted_before),
            id_prefix=self.id_prefix.lower() if self.id_prefix else None,
            meta=self.meta,
        )


def _seconds(value: float | str | None) -> float | None:
    assert not isinstance(value, str)  # made seconds by the validator
    return value


def _rfc3339(text: str) -> float:
    """Unix seconds of an RFC 3339 time with its offset (a ValueError names what is wrong)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 time (e.g. 2026-11-28T09:00:00Z)") from None
    if when.tzinfo is None:
        raise ValueError(f"{text!r} has no offset; add Z or +HH:MM")
    return when.timestamp()
