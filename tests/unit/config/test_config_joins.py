"""A task step's `join:`: the policies it accepts, what each needs of a list, and one line
per mistake naming the place, the bad value and the fix."""

from __future__ import annotations

import textwrap

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError

TEXT = """\
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        join: {join}
    tasks:
      - name: t
        itemListKey: items
        max_failed_items: {allowed}
        steps:
          - name: leaf
"""
PLACE = "wf.yaml:6: workflow 'w', step 'fan': "


def _load(join: str, allowed: int = 0):
    return parse_workflows(TEXT.format(join=join, allowed=allowed), "wf.yaml")["w"].steps[0].join


def _problems(join: str, allowed: int = 0) -> list[str]:
    with pytest.raises(ConfigError) as info:
        _load(join, allowed)
    return info.value.problems


@pytest.mark.parametrize(
    ("join", "policy", "then", "needed_of_10", "needed_of_3"),
    [
        ("all", "all", "cancel", 10, 3),
        ("{min_success: 4}", "min_success", "cancel", 4, 4),
        ("'{min_success: 80%, then: finish}'", "min_success", "finish", 8, 3),
        ("{min_success: '1%'}", "min_success", "cancel", 1, 1),
        ("{min_success: '34%'}", "min_success", "cancel", 4, 2),
        ("{min_success: '100%'}", "min_success", "cancel", 10, 3),
        ("{first: 2, then: cancel}", "first", "cancel", 2, 2),
    ],
)
def test_join_policies_and_how_many_children_they_need(
    join, policy, then, needed_of_10, needed_of_3
):
    loaded = _load(join.strip("'"))
    assert loaded is not None
    assert (loaded.policy, loaded.then) == (policy, then)
    assert (loaded.needed(10), loaded.needed(3)) == (needed_of_10, needed_of_3)


def test_first_may_share_its_task_with_max_failed_items():
    loaded = _load("{first: 2}", allowed=1)
    assert loaded is not None and loaded.first == 2


@pytest.mark.parametrize(
    ("join", "problem"),
    [
        ("any", "join: expected one of 'all', {min_success: 8}, {min_success: '80%'} or"),
        ("{min_success: 0}", "join.min_success: must be at least 1, got 0"),
        ("{min_success: -2}", "join.min_success: must be at least 1, got -2"),
        ("{min_success: 2.5}", "join.min_success: expected a whole number of children (e.g. 8)"),
        ("{min_success: true}", "join.min_success: expected a whole number of children"),
        ("{min_success: '0%'}", "join.min_success: a percentage is a whole number from 1% to"),
        ("{min_success: '101%'}", "join.min_success: a percentage is a whole number from 1% to"),
        ("{min_success: '12.5%'}", "join.min_success: a percentage is a whole number"),
        ("{min_success: 'half'}", "join.min_success: a percentage is a whole number"),
        ("{first: 0}", "join.first: must be at least 1, got 0"),
        ("{first: '3'}", "join.first: expected a whole number of children (e.g. 3), got '3'"),
        ("{first: 2, min_success: 2}", "join: either min_success or first, not both"),
        ("{then: finish}", "join: then says what becomes of the children still running"),
        ("{first: 1, then: later}", "join.then: expected one of 'cancel' or 'finish', got 'later'"),
        ("{min_sucess: 2}", "unknown field 'min_sucess' (allowed: min_success, first, then)"),
    ],
)
def test_a_bad_join_is_one_line_naming_the_step(join, problem):
    (line,) = _problems(join)
    assert line.startswith(PLACE + problem), line


def test_min_success_with_max_failed_items_on_its_task_is_refused():
    (line,) = _problems("{min_success: 2}", allowed=1)
    assert line.startswith(PLACE + "join: min_success tolerates failed children itself")
    assert "task 't' sets max_failed_items: 1 as well; drop one of them" in line


def test_join_on_a_step_without_task_is_refused():
    text = TEXT.format(join="{first: 1}", allowed=0).replace("task: t\n", "queue: q\n")
    with pytest.raises(ConfigError) as info:
        parse_workflows(textwrap.dedent(text), "wf.yaml")
    (line,) = info.value.problems
    assert "step 'fan': join says when a task step's children are enough; add task: NAME" in line


def test_validate_describes_a_join_beside_its_task():
    workflows = parse_workflows(TEXT.format(join="{first: 2, then: finish}", allowed=0))
    assert "step 'fan': task 't'; join first 2 (then finish)" in describe_workflows(workflows)
    plain = parse_workflows(TEXT.format(join="all", allowed=0))
    assert "join" not in describe_workflows(plain)
