"""The building blocks of the workflow file's models: names, JMESPath expressions checked when
loaded, and the base of every model (frozen, rejecting unknown fields)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from workflow_manager.config.expressions import compile_expression

__all__ = ["NAME_PATTERN", "ConfigModel", "ExpressionText", "KeyText", "Name"]

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


def _compiles(text: str) -> str:
    compile_expression(text)  # ExpressionError is a ValueError: reported with its line
    return text


def _compiles_key(text: str) -> str:
    compile_expression(text, "key: account (or customer.id, meta.tenant)")
    return text


ExpressionText = Annotated[str, StringConstraints(min_length=1), AfterValidator(_compiles)]
"""A JMESPath expression (a step's `when`, a fairness `weight`), checked when loaded."""

KeyText = Annotated[str, StringConstraints(min_length=1), AfterValidator(_compiles_key)]
"""A key (`concurrency.key`, `unique.key`, a `rate`'s or a limit's): a JMESPath expression,
checked when loaded."""


class ConfigModel(BaseModel):
    """The base of the file's models: frozen, unknown fields refused, fields by alias or name."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
