"""How a workflow's work is held back or shaped, as its file declares it: `concurrency`,
`rate` (a step's or a workflow's), `unique`, `fairness` and `debounce`. Each reads a key, a
JMESPath expression over the payload (a step's input for a step's `rate`) and, as
`meta.<field>`, the job's metadata; the engine's parts act on them."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

from pydantic import Field

from workflow_manager.config.expressions import Expression, compile_expression, key_text
from workflow_manager.config.fields import ConfigModel, ExpressionText, KeyText

__all__ = [
    "MAX_DEBOUNCE_PERIOD_S",
    "MAX_FAIR_WEIGHT",
    "MAX_RATE_LIMIT",
    "MAX_RATE_PER_S",
    "Concurrency",
    "Debounce",
    "Fairness",
    "Rate",
    "UniqueKey",
]


MAX_RATE_LIMIT = 10_000
"""The most starts a `rate` may allow per window (`rate.limit`)."""

MAX_RATE_PER_S = 86_400.0
"""The longest `rate` window (`rate.per`): one day."""


class Rate(ConfigModel):
    """`rate: {limit, per, key}`: at most `limit` starts in any `per` seconds (a sliding
    window, no bursts beyond it), per value of `key`: a JMESPath expression over the step's
    input (or the job's payload) with `meta.<field>` for metadata; without one, all share one
    window. Over the limit, work waits for its turn; it is never dropped."""

    limit: int = Field(ge=1, le=MAX_RATE_LIMIT, strict=True)
    per: float = Field(gt=0, le=MAX_RATE_PER_S, allow_inf_nan=False, strict=True)
    key: KeyText | None = None

    @cached_property
    def expression(self) -> Expression | None:
        """`key`, compiled once per definition."""
        return compile_expression(self.key) if self.key is not None else None

    def key_of(self, data: dict[str, Any]) -> str:
        """The key's value for `data` as canonical JSON text (`null` when there is no key, it
        finds nothing, or it cannot be evaluated)."""
        return key_text(self.expression, data)


class Concurrency(ConfigModel):
    """At most `limit` running top-level jobs of a workflow per value of `key`.

    `key` is a JMESPath expression over the job's payload; without one, all jobs share one
    value. A payload where the key finds nothing counts under the null key.
    """

    limit: int = Field(ge=1, strict=True)
    key: KeyText | None = None

    @cached_property
    def expression(self) -> Expression | None:
        """`key`, compiled once per definition."""
        return compile_expression(self.key) if self.key is not None else None

    def key_of(self, payload: dict[str, Any]) -> str:
        """The key's value for `payload` as canonical JSON text.

        `null` when there is no key, it finds nothing, or it cannot be evaluated on this payload.
        """
        return key_text(self.expression, payload)


class UniqueKey(ConfigModel):
    """`unique: {key: ...}`: at most one unfinished job of the workflow per value of `key`, a
    JMESPath expression over the job's payload (a null value is a key like any other)."""

    key: KeyText

    @cached_property
    def expression(self) -> Expression:
        """`key`, compiled once. (A later `meta.<field>` reads the job's metadata here.)"""
        return compile_expression(self.key)


MAX_FAIR_WEIGHT = 1000.0
"""The largest `fairness.weight` a job may have (turns per round against a weight-1 key)."""


class Fairness(ConfigModel):
    """`fairness: {key, weight}`: the workflow's jobs' work that waits for a limit goes
    round-robin across the values of `key` (a JMESPath expression over the payload, with
    `meta.<field>` for metadata), each value taking `weight` turns per round: an expression
    giving a number from 0.001 to 1000 (default 1). A job's children count under its key."""

    key: KeyText
    weight: ExpressionText | None = None

    @cached_property
    def expression(self) -> Expression:
        """`key`, compiled once."""
        return compile_expression(self.key)

    @cached_property
    def weight_expression(self) -> Expression | None:
        """`weight`, compiled once."""
        return compile_expression(self.weight) if self.weight is not None else None


MAX_DEBOUNCE_PERIOD_S = 86_400.0
"""The longest debounce window (`debounce.period`): one day."""


class Debounce(ConfigModel):
    """`debounce: {key, period, mode}`: triggers of the workflow with the same value of `key` (a
    JMESPath expression over the payload, or `meta.<field>`) within `period` seconds of the first
    make one job. `leading`: the first starts it at once; `trailing`: it starts when the period
    ends, with the last trigger's payload. The others are answered `debounced`."""

    key: KeyText
    period: float = Field(gt=0, le=MAX_DEBOUNCE_PERIOD_S, allow_inf_nan=False, strict=True)
    mode: Literal["leading", "trailing"] = "leading"

    @cached_property
    def expression(self) -> Expression:
        """`key`, compiled once."""
        return compile_expression(self.key)
