"""Nested limits (`limits:` at the top of the workflow file): running top-level jobs, counted
over several workflows at once.

Each entry is one count of running jobs: of every workflow, or of those it lists, and per
value of its `key` (a job-key expression: JMESPath over the payload, `meta.<field>` for the
metadata). A job starts only when every entry that applies to it has room
(workflow_manager.engine.admission). workflow_manager.config.limitchecks checks the raw
data, so that a duplicate name or an unknown workflow is reported with its line and a "did
you mean".
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path as FilePath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from workflow_manager.config.expressions import (
    Expression,
    compile_expression,
    key_text,
)
from workflow_manager.config.yamlsource import read_top_level

__all__ = ["JobLimit", "load_limits"]

_NAME = r"^[A-Za-z][A-Za-z0-9_-]*$"


class JobLimit(BaseModel):
    """At most `limit` running top-level jobs of `workflows` (None: every workflow) together,
    per value of `key` (None: one count for them all)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME)
    limit: int = Field(ge=1, strict=True)
    key: str | None = Field(default=None, min_length=1)
    workflows: tuple[str, ...] | None = None

    @field_validator("key")
    @classmethod
    def _key_compiles(cls, text: str | None) -> str | None:
        if text is not None:
            compile_expression(text, "key: meta.tenant (or customer.id)")
        return text

    @cached_property
    def expression(self) -> Expression | None:
        """`key`, compiled once per definition."""
        return compile_expression(self.key) if self.key is not None else None

    def applies_to(self, workflow: str) -> bool:
        """True when jobs of `workflow` count against this limit."""
        return self.workflows is None or workflow in self.workflows

    def key_of(self, data: dict[str, Any]) -> str:
        """The key's value for `data` (payload, and metadata under `meta`) as canonical JSON;
        `null` without a key, or when it finds nothing or cannot be evaluated."""
        return key_text(self.expression, data)


_LIMITS = TypeAdapter(tuple[JobLimit, ...])


def load_limits(path: str | FilePath) -> tuple[JobLimit, ...]:
    """The nested limits a workflow file declares, in file order.

    Call it after `load_workflows(path)` succeeded: that reports every problem of the file
    with its line; this reads only the `limits:` list of the (then valid) file.
    """
    return _LIMITS.validate_python(read_top_level(path, "limits") or ())
