"""Load workflow files into frozen models, or fail with a ConfigError listing every problem.

Each problem is one line naming its place: `file:line: workflow 'w', step 's': message`
(or `task 't', step 's'`, `on_error step 's'`, or `schedule 'n'`).
The pipeline: YAML with line numbers (`yamlsource`), structural checks on the raw data
(`checks`), model validation with pydantic's errors translated, then derived facts.
"""

from __future__ import annotations

import math
import os
from pathlib import Path as FilePath
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from workflow_manager.config.checks import check_document, number_text, quote, suggest
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.config.joinchecks import check_joins
from workflow_manager.config.joins import Join
from workflow_manager.config.limitchecks import check_limits
from workflow_manager.config.models import (
    Backoff,
    Concurrency,
    Debounce,
    Fairness,
    HandlerStep,
    HttpCall,
    Policy,
    Rate,
    Step,
    Task,
    UniqueKey,
    Workflow,
    WorkflowFile,
)
from workflow_manager.config.reduce import Reduce
from workflow_manager.config.reducechecks import check_reduces
from workflow_manager.config.schedules import Schedule
from workflow_manager.config.schemas import JsonSchema, resolve_schema_files
from workflow_manager.config.webhookchecks import check_triggers
from workflow_manager.config.webhooks import Trigger, Webhook
from workflow_manager.config.yamlsource import Document, Path, Problem, read_yaml
from workflow_manager.errors import ConfigError

__all__ = ["load_workflows", "parse_workflows"]

_KINDS = {
    "workflows": "workflow",
    "tasks": "task",
    "steps": "step",
    "on_error": "on_error step",
    "on_cancel": "on_cancel step",
    "schedules": "schedule",
    "webhooks": "webhook",
    "limits": "limit",
}
_MODELS: dict[str, type[BaseModel]] = {
    "workflows": Workflow,
    "tasks": Task,
    "steps": Step,
    "on_error": Step,
    "on_cancel": Step,
    "defaults": Policy,
    "retry_backoff": Backoff,
    "http": HttpCall,
    "fallback": HandlerStep,
    "compensate": HandlerStep,
    "unique": UniqueKey,
    "debounce": Debounce,
    "fairness": Fairness,
    "rate": Rate,
    "join": Join,
    "reduce": Reduce,
    "concurrency": Concurrency,  # a step's is a number: only a workflow's has fields
    "schedules": Schedule,
    "webhooks": Webhook,
    "triggers": Trigger,
    "limits": JobLimit,
}
_EXPECTED = {
    "string_type": "a string",
    "tuple_type": "a list",
    "list_type": "a list",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
}
_NAME_RULE = "a name is a letter, then letters, digits, '_' or '-'"
_WHOLE = {"int_type", "int_parsing", "int_from_float"}
_NUMBER = {"float_type", "float_parsing", "finite_number"}
_BOUNDS = {
    "greater_than_equal": "at least",
    "greater_than": "more than",
    "less_than_equal": "at most",
}
_NUMBER_FIELDS = {
    "retries", "timeout", "initial", "multiplier", "max", "max_failed_items", "tolerance_s",
    "limit", "per", "batch",
}  # fmt: skip
# The number fields given in seconds.
_SECONDS = {"initial", "max", "timeout", "http timeout", "tolerance_s", "per"}
_RANGE_NOTES = {
    "retries": "; retries counts the attempts after the first",
    "multiplier": "; 1 keeps every wait the same",
    "timeout": "; leave timeout out to wait without a limit",
    "http timeout": "; it limits each HTTP request (default 10)",
}
_SYNONYMS = {"on_failure": "on_error", "on_fail": "on_error"}  # too far apart for difflib
_BACKOFF_EXAMPLE = "{initial: 1, multiplier: 2, max: 60}"


def load_workflows(path: str | os.PathLike[str]) -> dict[str, Workflow]:
    """Load the workflow file at `path`: workflows by name, in file order."""
    return parse_workflows(_read_text(path), str(path), FilePath(path).parent)


def parse_workflows(
    text: str, source: str = "<string>", base_dir: FilePath | None = None
) -> dict[str, Workflow]:
    """Parse workflow YAML `text`; `source` names it in error messages, `base_dir` is where
    schema files (`$ref`) are read from (default: the current directory)."""
    doc, problems = read_yaml(text)
    if doc is None:
        raise ConfigError(_report(problems, None, source))
    problems += check_document(doc.data, doc.lines)
    problems += check_triggers(doc.data)
    problems += check_limits(doc.data, doc.lines)
    problems += check_joins(doc.data)
    problems += check_reduces(doc.data)
    problems += resolve_schema_files(doc.data, base_dir or FilePath("."))
    try:
        parsed = WorkflowFile.model_validate(doc.data, by_alias=True, by_name=False)
    except ValidationError as exc:
        errors = [error for error in exc.errors(include_url=False) if not _is_echo(error)]
        problems += [_explain(error, doc.data) for error in errors]
        raise ConfigError(_report(problems, doc, source)) from None
    if problems:
        raise ConfigError(_report(problems, doc, source))
    return _index(parsed, source)


def _read_text(path: str | os.PathLike[str]) -> str:
    source = str(path)
    try:
        raw = FilePath(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such file (looked for {os.path.abspath(path)})") from None
    except IsADirectoryError:
        raise ConfigError(f"{source}: is a directory; give the path of a YAML file") from None
    except PermissionError:
        raise ConfigError(f"{source}: permission denied; cannot read the file") from None
    except (OSError, ValueError) as exc:  # ValueError: e.g. a NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{source}: cannot read the file: {reason}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        byte = raw[exc.start]
        message = f"{source}:{line}: not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8"
        raise ConfigError(message) from None


def _index(parsed: WorkflowFile, source: str) -> dict[str, Workflow]:
    """Workflows by name, their derived facts computed now so that a bad one fails at load."""
    workflows = {workflow.name: workflow for workflow in parsed.workflows}
    for workflow in workflows.values():
        try:
            _ = (workflow.content_hash, workflow.task_by_name, workflow.policies)
            for flow in (workflow, *workflow.tasks, *workflow.branches.values()):
                _ = (flow.step_index, flow.dependents, flow.terminals)
                _ = [(step.condition, step.fallback_step, step.reduce_step) for step in flow.steps]
                _ = [_validators(step.input_schema, step.output_schema) for step in flow.steps]
            _ = _validators(workflow.payload_schema, *(t.payload_schema for t in workflow.tasks))
            for task in workflow.tasks:
                _ = task.item_key
        except Exception as exc:  # a library bug must not surface as a traceback
            message = f"{source}: workflow {quote(workflow.name)}: cannot derive its facts: {exc!r}"
            raise ConfigError(message) from exc
    return workflows


def _validators(*schemas: JsonSchema | None) -> list[object]:
    """Compile each schema's validator now, once for the definition."""
    return [schema.validator for schema in schemas if schema is not None]


def _report(problems: list[Problem], doc: Document | None, source: str) -> list[str]:
    """One line per problem, ordered by line, duplicates dropped."""
    located = []
    for problem in problems:
        line = problem.line or (doc.line_of(problem.path) if doc else None)
        where = source + (f":{line}" if line else "")
        where += f":{problem.column}" if line and problem.column else ""
        names = _place(doc.data, problem.path)[0] if doc and problem.path is not None else ""
        text = f"{where}: {names}: {problem.message}" if names else f"{where}: {problem.message}"
        located.append((line or 0, text))
    located.sort(key=lambda pair: pair[0])
    return list(dict.fromkeys(text for _, text in located))


def _place(data: Any, path: Path) -> tuple[str, Path]:
    """Human names for the workflow/task/step at `path`, and the rest of the path."""
    names, node, i = [], data, 0
    while i + 1 < len(path) and path[i] in _KINDS:
        key, index = path[i], path[i + 1]
        if not isinstance(index, int):
            break
        items = node.get(key) if isinstance(node, dict) else None
        node = items[index] if isinstance(items, list) and index < len(items) else None
        name = node.get("name") if isinstance(node, dict) else None
        label = quote(name) if isinstance(name, str) and name else f"#{index + 1}"
        names.append(f"{_KINDS[str(key)]} {label}")
        i += 2
    return ", ".join(names), path[i:]


def _field(rest: Path) -> str:
    """`depends[0]` for ('depends', 0)."""
    text = ""
    for part in rest:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _is_echo(error: ErrorDetails) -> bool:
    """True for pydantic's "too short" on a list whose items all failed: they are reported."""
    return error["type"] == "too_short" and bool(error.get("input"))


def _explain(error: ErrorDetails, data: Any) -> Problem:
    """A pydantic error as a Problem, in the words of the YAML file."""
    loc = tuple(error["loc"])
    return Problem(loc, _message(error, loc, _field(_place(data, loc)[1])))


def _message(error: ErrorDetails, loc: Path, field: str) -> str:
    kind, value = error["type"], error.get("input")
    prefix = f"{field}: " if field else ""
    if kind == "extra_forbidden":
        return _unknown_field(loc)
    if loc and loc[-1] in _NUMBER_FIELDS and kind in _WHOLE | _NUMBER | _BOUNDS.keys():
        name = "http timeout" if loc[-2:] == ("http", "timeout") else str(loc[-1])
        return prefix + _number_problem(error, name)
    if kind == "missing" or (kind == "too_short" and loc[-1:] == ("steps",)):
        return _missing(loc, kind)
    if kind == "string_pattern_mismatch" and loc[-1:] == ("[key]",):
        return (
            f"{field.split('.headers')[0]}.headers: invalid header name {_show(value)}: letters,"
            " digits and !#$%&'*+-.^_`|~ only"
        )
    if kind == "string_pattern_mismatch":
        return f"{prefix}invalid name {_show(value)}: {_NAME_RULE}"
    if kind == "model_type" and not loc:
        return f"the top level must be a mapping with 'workflows:', got {_show(value)}"
    if kind in _EXPECTED:
        return f"{prefix}expected {_EXPECTED[kind]}, got {_show(value)}{_hint(kind, loc, value)}"
    if kind == "string_too_short":
        return f"{prefix}must not be empty"
    if kind == "value_error":
        return f"{prefix}{error.get('ctx', {}).get('error', error['msg'])}"
    if kind == "literal_error":
        return f"{prefix}expected one of {error.get('ctx', {}).get('expected')}, got {_show(value)}"
    return f"{prefix}{error['msg']} (got {_show(value)})"


def _number_problem(error: ErrorDetails, field: str) -> str:
    """A number field's bad type or range, in seconds where it counts seconds."""
    kind, value = error["type"], error.get("input")
    unit = " seconds" if field in _SECONDS else ""
    if kind in _BOUNDS:
        bound = next(iter(error.get("ctx", {}).values()), "?")
        limit = number_text(bound) if isinstance(bound, int | float) else str(bound)
        note = _RANGE_NOTES.get(field, "") if kind != "less_than_equal" else ""
        return f"must be {_BOUNDS[kind]} {limit}{unit}, got {_show(value)}{note}"
    of_unit = f" of{unit}" if unit else ""
    if kind == "finite_number":
        return f"must be a finite number{of_unit}, got {_show(value)}"
    wanted = "a whole number" if kind in _WHOLE else f"a number{of_unit}"
    return f"expected {wanted}, got {_show(value)}{_number_hint(value, whole=kind in _WHOLE)}"


def _number_hint(value: Any, whole: bool) -> str:
    """'; write 30' for '30' or '30s': YAML read text where a number was meant."""
    if not isinstance(value, str):
        return ""
    text = value.strip().removesuffix("s").strip()
    try:
        number = float(text)
    except ValueError:
        return ""
    if not math.isfinite(number) or (whole and not number.is_integer()):
        return ""
    return f"; write {number_text(number)}, without quotes or units"


def _unknown_field(loc: Path) -> str:
    container = [part for part in loc[:-1] if isinstance(part, str)]
    model = _MODELS.get(container[-1], WorkflowFile) if container else WorkflowFile
    allowed = [info.alias or name for name, info in model.model_fields.items()]
    name = str(loc[-1])
    text = f"unknown field {quote(name)} (allowed: {', '.join(allowed)})"
    if model in (Workflow, Task) and name in Policy.model_fields:
        owner = "workflow" if model is Workflow else "task"
        return f"{text}; to set {name} for every step of the {owner}, put it under 'defaults:'"
    return text + suggest(_SYNONYMS.get(name, name), allowed)


def _missing(loc: Path, kind: str) -> str:
    field = str(loc[-1])
    owner = next((_KINDS[str(p)] for p in reversed(loc[:-1]) if p in _KINDS), "workflow")
    if field == "steps":
        state = "is empty" if kind == "too_short" else "is missing"
        return f"'steps' {state}: a {owner} needs at least one step"
    if field == "itemListKey":
        return "missing 'itemListKey': the input key whose list the task runs over, once per item"
    return f"missing required field {quote(field)}"


def _hint(kind: str, loc: Path, value: Any) -> str:
    field = loc[-1] if loc else None
    if isinstance(value, str) and len(loc) >= 2 and loc[-2] in _KINDS:
        return f"; write '- name: {value}'"
    if isinstance(value, str) and kind == "tuple_type" and field in {"on_error", "on_cancel"}:
        return f"; write a list of steps: [{{name: {value}}}]"
    if (
        isinstance(value, str)
        and kind in {"model_type", "model_attributes_type"}
        and (field == "compensate")
    ):
        return f"; write {field}: {{name: {value}}}"
    if isinstance(value, str) and kind == "tuple_type" and field in {"depends", "vhosts"}:
        return f"; write [{value}]"
    if field == "retry_backoff":
        return f"; write retry_backoff: {_BACKOFF_EXAMPLE}"
    if kind == "string_type" and value is not None and not isinstance(value, list | dict):
        return "; put it in quotes to make it text"
    return ""


def _show(value: Any) -> str:
    """A bad value as the user wrote it, short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int | float):
        return f"{value} (a number)"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "a mapping"
    return f"{quote(str(value))} (a {type(value).__name__})"
