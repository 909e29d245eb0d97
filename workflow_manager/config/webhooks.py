"""Webhook sources (`webhooks:` at the top of the file) and workflows' `triggers:` on them.

A source names its secret's environment variable, never the secret: the value is read when the
manager starts (workflow_manager.webhooks.resolve_secrets), so `validate` needs none.
workflow_manager.config.webhookchecks checks the raw data, so that a trigger naming no declared
source is reported with its line and a "did you mean".
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path as FilePath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from workflow_manager.config.expressions import Expression, compile_expression
from workflow_manager.config.yamlsource import read_top_level

__all__ = [
    "SIGNATURES",
    "DEFAULT_TOLERANCE_S",
    "Webhook",
    "Trigger",
    "load_webhooks",
]

_NAME = r"^[A-Za-z][A-Za-z0-9_-]*$"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
SIGNATURES = ("hmac-sha256", "github", "stripe")
DEFAULT_TOLERANCE_S = 300.0
"""How far a signed timestamp may be from the manager's clock (Stripe's libraries' default)."""
_PAYLOAD_EXAMPLE = 'payload: "{order: data.object.id, amount: data.object.amount}"'


class Webhook(BaseModel):
    """A sender of signed HTTP requests (`POST /hooks/<name>`) and how its signature is made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME)
    secret_env: str
    signature: Literal["hmac-sha256", "github", "stripe"]
    tolerance_s: float = Field(
        default=DEFAULT_TOLERANCE_S, gt=0, le=86_400, allow_inf_nan=False, strict=True
    )

    @field_validator("secret_env")
    @classmethod
    def _variable_name(cls, name: str) -> str:
        if not re.fullmatch(_ENV_NAME, name):
            raise ValueError(
                f"{name!r} is not an environment variable name (letters, digits and '_', "
                "not starting with a digit); name the variable, e.g. secret_env: GH_SECRET"
            )
        return name

    @model_validator(mode="after")
    def _tolerance_needs_timestamp(self) -> Webhook:
        if self.signature == "github" and "tolerance_s" in self.model_fields_set:
            raise ValueError(
                f"webhook {self.name!r}: GitHub signs no timestamp, so tolerance_s has nothing "
                "to check; leave it out (a redelivery is recognised by X-GitHub-Delivery)"
            )
        return self


class Trigger(BaseModel):
    """A workflow's `triggers:` entry: a request to webhook `webhook` starts a job when `when`
    holds over its JSON body (or always, without `when`), with `payload` over the body (or the
    body itself) as the job's payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    webhook: str = Field(pattern=_NAME)
    when: str | None = Field(default=None, min_length=1)
    payload: str | None = Field(default=None, min_length=1)

    @field_validator("when")
    @classmethod
    def _when_compiles(cls, text: str | None) -> str | None:
        if text is not None:
            compile_expression(text, "when: \"action == 'opened'\"")
        return text

    @field_validator("payload")
    @classmethod
    def _payload_compiles(cls, text: str | None) -> str | None:
        if text is not None:
            compile_expression(text, _PAYLOAD_EXAMPLE)
        return text

    @cached_property
    def condition(self) -> Expression | None:
        """`when`, compiled once per definition."""
        return compile_expression(self.when) if self.when is not None else None

    @cached_property
    def mapping(self) -> Expression | None:
        """`payload`, compiled once per definition."""
        return compile_expression(self.payload) if self.payload is not None else None


_WEBHOOKS = TypeAdapter(tuple[Webhook, ...])


def load_webhooks(path: str | FilePath) -> tuple[Webhook, ...]:
    """The webhook sources a workflow file declares.

    Call it after `load_workflows(path)` succeeded: that reports every problem of the file
    with its line; this reads only the `webhooks:` list of the (then valid) file.
    """
    return _WEBHOOKS.validate_python(read_top_level(path, "webhooks") or ())
