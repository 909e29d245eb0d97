"""The keys of a workflow's data that its rules read, so they stay inline (never a payload
reference): a `when`, a job key, a schema, a task's list. Pure, from the definition alone.

Over-approximated on purpose: every field name an expression mentions, at any depth, counts as
a top-level key a rule may read, and an expression or schema that may read any key (`@`, `*`,
`keys(@)`, `additionalProperties: {...}`) keeps every key inline (`EVERY_KEY`). A key kept
inline that no rule reads costs bytes; one stored that a rule reads would cost correctness.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jmespath
from jmespath import exceptions as jmespath_errors
from pydantic import BaseModel

from workflow_manager.config.schemas import JsonSchema

__all__ = ["EVERY_KEY", "InlineKeys", "inline_keys"]

InlineKeys = frozenset[str] | None
"""The keys kept inline; `EVERY_KEY` (None) when a rule may read any."""
EVERY_KEY: InlineKeys = None

_EXPRESSION_FIELDS = frozenset(("when", "key", "weight"))  # a rule's JMESPath, by field name
_READS_ANY_NODE = frozenset(("current", "value_projection"))
_READS_ANY_SCHEMA = ("patternProperties", "propertyNames", "unevaluatedProperties")


class _ReadsAny(Exception):
    """A rule may read any key."""


def inline_keys(*definitions: BaseModel) -> InlineKeys:
    """The keys the rules of `definitions` read: a workflow (with its tasks and steps), and
    the workflow file's `limits:` over every workflow's jobs."""
    try:
        return frozenset(key for model in definitions for key in _keys(model))
    except _ReadsAny:
        return EVERY_KEY


def _keys(model: BaseModel) -> Iterator[str]:
    if isinstance(model, JsonSchema):
        yield from _schema_keys(model.document)
        return
    for name in type(model).model_fields:
        value = getattr(model, name)
        if name == "item_list_key" and isinstance(value, str):
            yield value  # a task step fans out over it
        elif name in _EXPRESSION_FIELDS and isinstance(value, str):
            yield from _expression_keys(value)
        else:
            yield from _nested_keys(value)


def _nested_keys(value: Any) -> Iterator[str]:
    if isinstance(value, BaseModel):
        yield from _keys(value)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _nested_keys(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _nested_keys(item)


def _expression_keys(text: str) -> Iterator[str]:
    try:
        tree = jmespath.compile(text).parsed
    except jmespath_errors.JMESPathError:
        return  # not an expression after all (the loader checks those that are)
    yield from _field_names(tree)


def _field_names(node: Mapping[str, Any]) -> Iterator[str]:
    if node["type"] in _READS_ANY_NODE:
        raise _ReadsAny
    if node["type"] == "field":
        yield node["value"]
    for child in node.get("children", ()):
        if isinstance(child, dict):
            yield from _field_names(child)


def _schema_keys(schema: Any) -> Iterator[str]:
    if isinstance(schema, list):
        for item in schema:
            yield from _schema_keys(item)
        return
    if not isinstance(schema, dict):
        return
    if any(word in schema for word in _READS_ANY_SCHEMA):
        raise _ReadsAny
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        raise _ReadsAny
    properties = schema.get("properties")
    if isinstance(properties, dict):
        yield from properties
    required = schema.get("required")
    if isinstance(required, list):
        yield from (name for name in required if isinstance(name, str))
    for value in schema.values():
        yield from _schema_keys(value)
