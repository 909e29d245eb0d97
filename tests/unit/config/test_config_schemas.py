"""Schemas in workflow files: inline or `{$ref: file}`, checked at load, part of the hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_manager.config import load_workflows, parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.config.models import Workflow
from workflow_manager.errors import ConfigError

ORDER = {"type": "object", "required": ["qty"], "properties": {"qty": {"minimum": 1}}}
REF = """\
workflows:
  - name: w
    payload_schema: {$ref: schemas/order.json}
    steps:
      - name: a
        input_schema: {type: object}
        output_schema: {$ref: schemas/order.json}
    tasks:
      - name: t
        itemListKey: items
        payload_schema: {$ref: schemas/order.json}
        steps:
          - name: c
"""


def _files(tmp_path: Path, schema: object = ORDER) -> Path:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "order.json").write_text(json.dumps(schema))
    config = tmp_path / "workflows.yaml"
    config.write_text(REF)
    return config


def test_a_ref_is_read_relative_to_the_workflow_file_and_compiled_once(tmp_path):
    wf = load_workflows(_files(tmp_path))["w"]
    assert wf.payload_schema is not None and wf.payload_schema.document == ORDER
    assert wf.payload_schema.file == "schemas/order.json"
    assert "validator" in wf.payload_schema.__dict__  # compiled by the loader
    assert wf.tasks[0].payload_schema is not None
    assert wf.steps[0].output_schema is not None and wf.steps[0].input_schema is not None
    text = describe_workflows({"w": wf})
    assert "payload checked against schema 'schemas/order.json'" in text
    assert "input checked against an inline schema" in text


def test_the_schema_content_is_part_of_the_hash_and_survives_the_stored_definition(tmp_path):
    before = load_workflows(_files(tmp_path))["w"]
    (tmp_path / "schemas" / "order.json").write_text(json.dumps({**ORDER, "required": []}))
    after = load_workflows(tmp_path / "workflows.yaml")["w"]
    assert before.content_hash != after.content_hash
    stored = Workflow.model_validate_json(before.model_dump_json(by_alias=True))
    assert stored.content_hash == before.content_hash
    assert stored.payload_schema is not None and stored.payload_schema.document == ORDER


def test_a_missing_schema_file_names_the_field_and_the_path(tmp_path):
    (tmp_path / "workflows.yaml").write_text(REF)
    with pytest.raises(ConfigError) as info:
        load_workflows(tmp_path / "workflows.yaml")
    source = str(tmp_path / "workflows.yaml")
    missing = f"no such schema file 'schemas/order.json' (looked for {tmp_path}/schemas/order.json)"
    assert info.value.problems == [
        f"{source}:3: workflow 'w': payload_schema: {missing}",
        f"{source}:7: workflow 'w', step 'a': output_schema: {missing}",
        f"{source}:11: workflow 'w', task 't': payload_schema: {missing}",
    ]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            "{type: objekt}",
            "not a valid JSON Schema (2020-12) (inline): at $.type: 'objekt' is not valid under "
            "any of the given schemas (rule anyOf)",
        ),
        (
            "{properties: {a: {minimum: one}}}",
            "not a valid JSON Schema (2020-12) (inline): at $.properties.a.minimum: 'one' is not"
            " of type 'number' (rule type)",
        ),
        ("[1, 2]", "a schema is a mapping: a JSON Schema written inline, or {$ref: path/to/file."),
    ],
)
def test_an_invalid_schema_is_rejected_naming_file_line_and_step(schema: str, expected: str):
    text = f"workflows:\n  - name: w\n    steps:\n      - name: a\n        input_schema: {schema}\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    (problem,) = info.value.problems
    assert problem.startswith(f"wf.yaml:5: workflow 'w', step 'a': input_schema: {expected}")


def test_an_invalid_schema_file_names_the_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_workflows(_files(tmp_path, {"type": 5}))
    assert any("(schemas/order.json): at $.type" in p for p in info.value.problems)
