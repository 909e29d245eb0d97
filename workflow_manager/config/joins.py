"""A task step's `join`: when its gathered children are enough.

`join: all` (the default) waits for every child; `join: {min_success: N}` (or `"P%"` of the
children) completes once that many succeeded, failed children tolerated while it can still
be met; `join: {first: N}` completes once N succeeded, a failed child failing the step as
under `all` (the task's `max_failed_items` tolerates some). `then` says what becomes of the
children still running when the step completes: `cancel` (default) or `finish`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import field_validator, model_validator

from workflow_manager.config.fields import ConfigModel

__all__ = ["Join", "JoinPolicy"]

JoinPolicy = Literal["all", "min_success", "first"]

_PERCENT = re.compile(r"^\s*(\d+)\s*%\s*$")
_SHAPES = "'all', {min_success: 8}, {min_success: '80%'} or {first: 3}"


def _count(value: Any, wanted: str) -> int:
    """A whole number of children, at least 1, or a ValueError in the file's words (the
    loader prefixes the field's name)."""
    if isinstance(value, bool) or not isinstance(value, int):
        shown = f"'{value}'" if isinstance(value, str) else json.dumps(value)
        raise ValueError(f"expected {wanted}, got {shown}")
    if value < 1:
        raise ValueError(f"must be at least 1, got {value}")
    return value


class Join(ConfigModel):
    """`join:` of a task step; no policy field set means `all`."""

    min_success: int | str | None = None
    first: int | None = None
    then: Literal["cancel", "finish"] = "cancel"

    @model_validator(mode="before")
    @classmethod
    def _all_as_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.strip() == "all":
                return {}
            raise ValueError(f"expected one of {_SHAPES}, got '{value}'")
        return value

    @field_validator("min_success", mode="before")
    @classmethod
    def _min_success(cls, value: Any) -> int | str | None:
        if value is None:
            return None
        if isinstance(value, str):
            match = _PERCENT.match(value)
            if match is None or not 1 <= int(match.group(1)) <= 100:
                raise ValueError(
                    f"a percentage is a whole number from 1% to 100% (e.g. '80%'), got '{value}'"
                )
            return f"{int(match.group(1))}%"
        return _count(value, "a whole number of children (e.g. 8) or a percentage (e.g. '80%')")

    @field_validator("first", mode="before")
    @classmethod
    def _first(cls, value: Any) -> int | None:
        return None if value is None else _count(value, "a whole number of children (e.g. 3)")

    @model_validator(mode="after")
    def _one_policy(self) -> Join:
        if self.min_success is not None and self.first is not None:
            raise ValueError(
                "either min_success or first, not both: min_success tolerates failed "
                "children, first fails on one (as join: all)"
            )
        if self.policy == "all" and "then" in self.model_fields_set:
            raise ValueError(
                "then says what becomes of the children still running once min_success or "
                "first is met; join: all waits for every child, so it has none"
            )
        return self

    @property
    def policy(self) -> JoinPolicy:
        """Which policy: `all`, `min_success` or `first`."""
        if self.min_success is not None:
            return "min_success"
        return "first" if self.first is not None else "all"

    @property
    def text(self) -> str:
        """The policy as the file writes it, for messages: `min_success 80%`, `first 3`."""
        if self.min_success is not None:
            return f"min_success {self.min_success}"
        return f"first {self.first}" if self.first is not None else "all"

    def needed(self, children: int) -> int:
        """How many of `children` must succeed: all of them, N, or P% rounded up."""
        if isinstance(self.min_success, str):
            percent = int(self.min_success.rstrip("%"))
            return (children * percent + 99) // 100  # exact: no float rounding
        if self.min_success is not None:
            return self.min_success
        return self.first if self.first is not None else children
