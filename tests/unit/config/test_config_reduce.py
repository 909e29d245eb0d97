"""`reduce:` of a task step: its shape, its defaults, and the problems the loader reports."""

from __future__ import annotations

import textwrap

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError
from workflow_manager.settings import step_queues

BASE = """\
workflows:
  - name: w
    steps:
      - name: fan
        {task}
        reduce: {reduce}
      {more}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
"""


def _text(reduce: str, task: str = "task: t", more: str = "") -> str:
    return BASE.format(reduce=reduce, task=task, more=more)


def problems_of(text: str) -> list[str]:
    """The problem lines parse_workflows reports for `text` (which must be invalid)."""
    with pytest.raises(ConfigError) as info:
        parse_workflows(textwrap.dedent(text), "wf.yaml")
    return info.value.problems


def test_defaults_and_the_reducers_own_policy():
    wf = parse_workflows(_text("{step: total, retries: 2, timeout: 5}"), "wf.yaml")["w"]
    step = wf.steps[0]
    assert step.reduce is not None
    assert (step.reduce.batch, step.reduce.initial) == (100, {})
    reducer = step.reduce_step
    assert reducer is not None and (reducer.name, reducer.queue_name) == ("total", "total")
    policy = wf.policy(wf, "total")
    assert (policy.retries, policy.timeout_s) == (2, 5)


def test_queue_and_initial():
    text = _text("{step: total, queue: sums, batch: 7, initial: {sum: 0}}")
    step = parse_workflows(text, "wf.yaml")["w"].steps[0]
    assert step.reduce_step is not None and step.reduce_step.queue_name == "sums"
    assert step.reduce is not None and (step.reduce.batch, step.reduce.initial) == (7, {"sum": 0})


@pytest.mark.parametrize(
    ("reduce", "task", "more", "expected"),
    [
        (
            "{step: total}",
            "queue: q",
            "",
            "reduce folds a task step's children's results; add task: NAME",
        ),
        ("{step: total, batch: 0}", "task: t", "", "batch"),
        ("{step: total, batch: 0}", "task: t", "", "reduce.batch: must be at least 1, got 0"),
        ("{step: total, initial: 3}", "task: t", "", "initial"),
        ("{batch: 3}", "task: t", "", "step"),
        (
            "{step: total, size: 3}",
            "task: t",
            "",
            "unknown field 'size' (allowed: step, queue, batch",
        ),
        ("{step: after}", "task: t", "- name: after", "reducer 'after' has the name of a step"),
    ],
)
def test_problems(reduce, task, more, expected):
    problems = problems_of(_text(reduce, task, more))
    assert any(expected in line for line in problems), problems
    assert all(line.startswith("wf.yaml:") for line in problems), problems


def test_validate_describes_the_reducer_and_the_manager_declares_its_queue():
    workflows = parse_workflows(_text("{step: total, queue: sums, batch: 7, retries: 2}"), "f")
    text = describe_workflows(workflows)
    assert "step 'fan': task 't'; reduce by 'total' (queue 'sums', batch 7, retries 2" in text
    assert "sums" in step_queues(workflows.values())
