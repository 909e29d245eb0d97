"""A workflow's schedules: `cron` (five fields, in a timezone) or `every` N seconds.

Fire times are computed here, purely: `Schedule.next_fire(after)`, `Schedule.last_fire(at)` and
`Schedule.missed_fire(now, since)` take Unix seconds and give Unix seconds, so the scheduler
and the tests share one rule.
A cron schedule's times are wall-clock times in its timezone (croniter), DST included.
"""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["Schedule", "schedule_job_id"]

_NAME = r"^[A-Za-z][A-Za-z0-9_-]*$"


def schedule_job_id(workflow: str, schedule: str, fire_at: float) -> str:
    """The id of the job a firing starts: the same for the same firing, however often seen."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"schedule:{workflow}/{schedule}/{fire_at:.3f}"))


class Schedule(BaseModel):
    """When a workflow starts by itself, and with which payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME)
    cron: str | None = Field(default=None, min_length=1)
    every: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    timezone: str = "UTC"
    payload: dict[str, Any] = Field(default_factory=dict)
    # A firing missed while the manager was down: the latest one runs once at start.
    catch_up: bool = True
    # skip: no firing while this schedule's previous job is still running.
    overlap: Literal["skip", "allow"] = "skip"

    @field_validator("cron")
    @classmethod
    def _cron(cls, cron: str | None) -> str | None:
        if cron is None:
            return cron
        from croniter import croniter

        fields = cron.split()
        if len(fields) != 5 or not croniter.is_valid(cron):
            raise ValueError(
                f"{cron!r} is not a five-field cron expression (minute hour day-of-month month "
                'day-of-week); write e.g. cron: "0 2 * * *" for 02:00 every day'
            )
        return cron

    @field_validator("timezone")
    @classmethod
    def _zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            import difflib

            close = difflib.get_close_matches(zone, sorted(available_timezones()), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else " (e.g. Europe/Paris, UTC)"
            raise ValueError(f"unknown timezone {zone!r}{hint}") from None
        return zone

    @model_validator(mode="after")
    def _one_kind(self) -> Schedule:
        if (self.cron is None) == (self.every is None):
            raise ValueError('give either cron ("0 2 * * *") or every (seconds)')
        if self.every is not None and self.timezone != "UTC":
            raise ValueError("a timezone applies to cron only; leave it out with every")
        return self

    @cached_property
    def zone(self) -> ZoneInfo:
        """The timezone cron times are read in."""
        return ZoneInfo(self.timezone)

    def next_fire(self, after: float) -> float:
        """The first fire time strictly after `after` (Unix seconds)."""
        if self.every is not None:
            return (math.floor(after / self.every) + 1) * self.every
        from croniter import croniter

        assert self.cron is not None  # _one_kind: a schedule without `every` has `cron`
        start = datetime.fromtimestamp(after, UTC).astimezone(self.zone)
        return float(croniter(self.cron, start).get_next(float))

    def missed_fire(self, now: float, since: float) -> float | None:
        """The firing a start catches up: the latest fire time at or before `now`, if the
        schedule existed then (at or after `since`); None when there is none to catch up."""
        latest = self.last_fire(now)
        return latest if latest >= since else None

    def last_fire(self, at: float) -> float:
        """The latest fire time at or before `at` (Unix seconds)."""
        if self.every is not None:
            return math.floor(at / self.every) * self.every
        from croniter import croniter

        assert self.cron is not None  # _one_kind: a schedule without `every` has `cron`
        start = datetime.fromtimestamp(at + 1e-3, UTC).astimezone(self.zone)
        return float(croniter(self.cron, start).get_prev(float))
