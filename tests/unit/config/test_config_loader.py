"""Valid files load into workflows with their derived facts, hash and summary."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from workflow_manager.config import describe_workflows, load_workflows, parse_workflows

ROOT = Path(__file__).resolve().parents[3]

BLOCK = """\
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
        task: t
    tasks:
      - name: t
        itemListKey: sections
        steps:
          - name: c
"""

# The same definition: flow style, other key order, comments, explicit defaults.
FLOW = """\
# reordered
workflows:
- tasks: [{steps: [{name: c, depends: []}], itemListKey: "sections", name: t}]
  steps: [{name: a}, {task: t, name: b, depends: [a]}]
  vhosts: []
  name: w
"""


def test_the_example_workflow_file_loads() -> None:
    workflows = load_workflows(ROOT / "workflows.yaml")
    assert list(workflows) == ["book-word-counts"]
    workflow = workflows["book-word-counts"]
    task = workflow.task_by_name["word-counts"]
    assert task.item_key == "section"
    assert workflow.terminals == ("sum-splits", "store-title")
    assert workflow.dependents["book-split"] == ("section-counts",)
    assert [step.name for step in task.steps] == ["segment-word-counts"]


def test_derived_facts_are_computed_at_load() -> None:
    workflow = parse_workflows(BLOCK)["w"]
    for name in ("content_hash", "dependents", "terminals", "task_by_name"):
        assert name in workflow.__dict__
    for name in ("item_key", "dependents", "terminals"):
        assert name in workflow.tasks[0].__dict__


def test_workflows_keep_file_order() -> None:
    text = "workflows:\n" + "".join(
        f"  - name: {name}\n    steps: [{{name: s}}]\n" for name in ("zeta", "alpha", "mid")
    )
    assert list(parse_workflows(text)) == ["zeta", "alpha", "mid"]


def test_content_hash_is_stable_and_ignores_formatting() -> None:
    first = parse_workflows(BLOCK)["w"].content_hash
    assert first == parse_workflows(BLOCK)["w"].content_hash
    assert first == parse_workflows(FLOW)["w"].content_hash
    assert len(first) == 16


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("depends: [a]", "depends: []"),
        ("- name: c", "- name: d"),
        ("itemListKey: sections", "itemListKey: chapters"),
        ("task: t", "task: t\n        queue: other"),
    ],
)
def test_content_hash_changes_with_the_definition(old: str, new: str) -> None:
    changed = BLOCK.replace(old, new)
    assert changed != BLOCK
    assert parse_workflows(changed)["w"].content_hash != parse_workflows(BLOCK)["w"].content_hash


@pytest.mark.parametrize(
    ("task_yaml", "expected"),
    [
        ("itemListKey: sections", "itemListKey 'sections' -> item key 'section'"),
        ("itemListKey: children", "itemListKey 'children' -> item key 'child'"),
        ("itemListKey: status", "itemListKey 'status' -> item key 'status'"),
        (
            "{itemListKey: sections, itemKey: chapter}",
            "itemListKey 'sections' -> item key 'chapter' (set by itemKey)",
        ),
    ],
)
def test_describe_shows_the_derived_item_key(task_yaml: str, expected: str) -> None:
    fields = task_yaml.strip("{}").replace(", ", "\n        ")
    text = BLOCK.replace("itemListKey: sections", fields)
    summary = describe_workflows(parse_workflows(text))
    assert f"  task 't': {expected}\n" in summary


def test_describe_the_example() -> None:
    workflows = load_workflows(ROOT / "workflows.yaml")
    digest = workflows["book-word-counts"].content_hash
    assert describe_workflows(workflows) == textwrap.dedent(
        f"""\
        workflow 'book-word-counts' (hash {digest})
          step 'book-split': queue 'book-split'
          step 'section-counts': depends on book-split; task 'word-counts'
          step 'sum-splits': depends on section-counts; queue 'sum-splits'
          step 'store-title': queue 'store-title'
          terminals: sum-splits, store-title
          task 'word-counts': itemListKey 'sections' -> item key 'section'
            step 'segment-word-counts': queue 'segment-word-counts'
            terminals: segment-word-counts"""
    )


def test_describe_shows_queues_and_vhosts() -> None:
    text = "workflows:\n  - name: w\n    vhosts: [/, jobs]\n    steps: [{name: a, queue: q1}]\n"
    assert describe_workflows(parse_workflows(text)) == "\n".join(
        [
            f"workflow 'w' (hash {parse_workflows(text)['w'].content_hash})",
            "  vhosts: /, jobs",
            "  step 'a': queue 'q1'",
            "  terminals: a",
        ]
    )


def test_depends_may_name_a_later_step() -> None:
    text = "workflows:\n  - name: w\n    steps: [{name: b, depends: [a]}, {name: a}]\n"
    assert parse_workflows(text)["w"].terminals == ("b",)
