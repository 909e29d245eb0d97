"""The keys a workflow's rules read stay inline (never a payload reference): `inline_keys`."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.inlinekeys import EVERY_KEY, inline_keys


def _keys(text: str) -> frozenset[str] | None:
    return inline_keys(parse_workflows(text, "wf.yaml")["w"])


def test_a_workflow_with_no_rule_reading_data_keeps_nothing_inline():
    assert _keys("workflows:\n  - name: w\n    steps:\n      - name: a\n") == frozenset()


def test_when_keys_and_task_lists_are_kept():
    text = """
workflows:
  - name: w
    unique: {key: order.id}
    steps:
      - name: a
      - name: b
        depends: [a]
        when: "total > `10` && customer.tier == 'gold'"
      - name: fan
        depends: [a]
        task: each
    tasks:
      - name: each
        itemListKey: lines
        steps:
          - name: one
"""
    assert _keys(text) == {"order", "id", "total", "customer", "tier", "lines"}


def test_schema_properties_and_required_are_kept():
    text = """
workflows:
  - name: w
    payload_schema:
      type: object
      required: [name]
      properties: {name: {type: string}, size: {type: integer}}
    steps:
      - name: a
"""
    assert _keys(text) == {"name", "size"}


@pytest.mark.parametrize("when", ['"length(@) > `2`"', '"keys(@)"', '"*"', '"items[?@ > `1`]"'])
def test_an_expression_that_may_read_any_key_keeps_every_key(when: str):
    text = (
        "workflows:\n  - name: w\n    steps:\n      - name: a\n"
        f"      - name: b\n        depends: [a]\n        when: {when}\n"
    )
    assert _keys(text) is EVERY_KEY


def test_a_schema_over_any_key_keeps_every_key():
    text = """
workflows:
  - name: w
    payload_schema: {type: object, additionalProperties: {type: string}}
    steps:
      - name: a
"""
    assert _keys(text) is EVERY_KEY
