"""Data contracts: JSON Schemas (2020-12) a workflow checks payloads, inputs and outputs against.

A schema is written inline in the workflow YAML, or as `{$ref: path}`: a JSON or YAML file
relative to the workflow file, read when the workflow is loaded (`resolve_schema_files`). Either
way the schema's content is part of the definition (and of its content hash), so a running job
keeps the schemas it started with. Each schema is compiled once, when the workflow is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ConfigDict, model_validator

from workflow_manager.config.yamlsource import Path, Problem

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = ["JsonSchema", "SCHEMA_FIELDS", "resolve_schema_files"]

# Where schemas may be written: on a workflow or task, and on a step.
SCHEMA_FIELDS = {"payload_schema": ("workflows", "tasks"), "input_schema": ("steps",),
                 "output_schema": ("steps",)}  # fmt: skip
_MAX_SHOWN = 3


class JsonSchema(BaseModel):
    """A JSON Schema and where it came from (`file`, as the `$ref` named it; None: inline)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str | None = None
    document: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _inline(cls, value: Any) -> Any:
        """An inline schema is the mapping itself; a resolved `$ref` comes as {file, document}."""
        if isinstance(value, dict) and "document" in value and set(value) <= {"file", "document"}:
            return value
        if not isinstance(value, dict):
            raise ValueError(
                "a schema is a mapping: a JSON Schema written inline, or {$ref: path/to/file.json}"
            )
        return {"document": value}

    @model_validator(mode="after")
    def _valid(self) -> JsonSchema:
        # Imported here: a manager whose workflows have no schema never loads jsonschema (3 MB).
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(self.document)
        except SchemaError as exc:
            raise ValueError(
                f"not a valid JSON Schema (2020-12) ({self.source}): at {exc.json_path}:"
                f" {exc.message} (rule {exc.validator})"
            ) from None
        return self

    @property
    def source(self) -> str:
        """Where the schema is written, for messages: its file, or 'inline'."""
        return self.file if self.file is not None else "inline"

    @cached_property
    def validator(self) -> Draft202012Validator:
        """The compiled validator (once per definition: the loader builds it at load)."""
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.document)

    def violations(self, data: Any) -> str | None:
        """Why `data` does not match, naming each JSON path and rule; None when it matches."""
        errors = sorted(self.validator.iter_errors(data), key=lambda e: (e.json_path, e.message))
        if not errors:
            return None
        shown = "; ".join(
            f"at {e.json_path}: {e.message} (rule {e.validator})" for e in errors[:_MAX_SHOWN]
        )
        more = f"; and {len(errors) - _MAX_SHOWN} more" if len(errors) > _MAX_SHOWN else ""
        return f"{shown}{more} (schema: {self.source})"


def resolve_schema_files(data: Any, base_dir: FilePath) -> list[Problem]:
    """Replace each `{$ref: file}` schema in the raw document by the file's content, in place.

    Files are read relative to `base_dir` (the workflow file's directory); a missing or
    unreadable one is a problem at its `$ref`.
    """
    problems = []
    for path, owner, key in _schema_places(data):
        value = owner[key]
        if not (isinstance(value, dict) and set(value) == {"$ref"}):
            continue
        ref = value["$ref"]
        if not isinstance(ref, str) or ref.startswith("#"):
            continue  # a reference inside the schema: the validator resolves it
        document, problem = _read(base_dir, ref)
        if problem is not None:
            problems.append(Problem((*path, key, "$ref"), f"{key}: {problem}"))
        else:
            owner[key] = {"file": ref, "document": document}
    return problems


def _schema_places(data: Any) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """(path of the owner, owner mapping, key) for each schema field in a raw document."""
    workflows = data.get("workflows") if isinstance(data, dict) else None
    for wi, workflow in _mappings(workflows):
        where: Path = ("workflows", wi)
        yield from _fields(where, workflow, "workflows")
        for key in ("steps", "on_error", "on_cancel"):
            for si, step in _mappings(workflow.get(key)):
                yield from _fields((*where, key, si), step, "steps")
        for ti, task in _mappings(workflow.get("tasks")):
            yield from _fields((*where, "tasks", ti), task, "tasks")
            for si, step in _mappings(task.get("steps")):
                yield from _fields((*where, "tasks", ti, "steps", si), step, "steps")


def _mappings(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    if isinstance(value, list):
        yield from ((i, item) for i, item in enumerate(value) if isinstance(item, dict))


def _fields(
    path: Path, owner: dict[str, Any], kind: str
) -> Iterator[tuple[Path, dict[str, Any], str]]:
    for key, kinds in SCHEMA_FIELDS.items():
        if kind in kinds and key in owner:
            yield path, owner, key


def _read(base_dir: FilePath, ref: str) -> tuple[Any, str | None]:
    """A schema file's content (JSON or YAML), or why it cannot be read."""
    target = base_dir / ref
    try:
        text = target.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, f"no such schema file {ref!r} (looked for {os.path.abspath(target)})"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"cannot read schema file {ref!r}: {exc}"
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, f"schema file {ref!r} is not JSON or YAML: {exc}".replace("\n", " ")
    if not isinstance(document, dict):
        return None, f"schema file {ref!r} must hold a mapping (a JSON Schema object)"
    return document, None
