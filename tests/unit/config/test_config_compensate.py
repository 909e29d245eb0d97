"""`compensate` on a step: a step spec validated with file:line, did-you-mean and unique names."""

from __future__ import annotations

import textwrap

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError

GOOD = """\
workflows:
  - name: order
    defaults: {timeout: 30}
    steps:
      - name: reserve
        compensate: {name: release, queue: inventory-release}
      - name: charge
        depends: [reserve]
        compensate: {name: refund, retries: 5}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: book
            compensate: {name: unbook}
"""


def problems_of(text: str) -> list[str]:
    """The problem lines parse_workflows reports for `text` (which must be invalid)."""
    with pytest.raises(ConfigError) as info:
        parse_workflows(textwrap.dedent(text), "wf.yaml")
    return info.value.problems


def test_a_compensation_is_a_step_spec_with_its_own_policy():
    wf = parse_workflows(GOOD)["order"]
    release = wf.steps[0].compensate
    assert release is not None and release.queue_name == "inventory-release"
    refund = wf.policy(wf, "refund")
    assert (refund.retries, refund.timeout_s) == (5, 30)  # its own, else the defaults
    assert wf.policy(wf.tasks[0], "unbook").timeout_s == 30
    assert wf.compensates


def test_validate_describes_each_compensation():
    text = describe_workflows(parse_workflows(GOOD))
    assert "compensate 'release' (queue 'inventory-release'" in text
    assert "compensate 'refund' (queue 'refund', retries 5" in text


def test_a_workflow_without_compensate_does_not_compensate():
    wf = parse_workflows("workflows: [{name: w, steps: [{name: a}]}]")["w"]
    assert not wf.compensates


CASES = [
    (
        "misspelt field",
        "compensate: {name: refund, retires: 5}",
        "wf.yaml:5: workflow 'w', step 'b': unknown field 'retires' (allowed: name, queue,"
        " retries, retry_backoff, timeout); did you mean 'retries'?",
    ),
    (
        "a bare name",
        "compensate: refund",
        "wf.yaml:5: workflow 'w', step 'b': compensate: expected a mapping, got 'refund';"
        " write compensate: {name: refund}",
    ),
    (
        "no name",
        "compensate: {queue: q}",
        "wf.yaml:5: workflow 'w', step 'b': missing required field 'name'",
    ),
    (
        "named like a step",
        "compensate: {name: a}",
        "wf.yaml:5: workflow 'w', step 'b': compensation name 'a' is already used by a step"
        " (line 4); give it a name of its own, as replies find their step or compensation by"
        " name",
    ),
]


@pytest.mark.parametrize(("line", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_compensations_name_their_line_and_step(line: str, expected: str):
    text = f"""\
    workflows:
      - name: w
        steps:
          - name: a
          - {{name: b, depends: [a], {line}}}
    """
    assert problems_of(text) == [expected]


def test_two_compensations_with_one_name_and_one_on_a_branch_step_are_refused():
    text = """\
    workflows:
      - name: w
        steps:
          - {name: a, compensate: {name: undo}}
          - {name: b, compensate: {name: undo}}
        on_error:
          - {name: alert, compensate: {name: unalert}}
    """
    assert problems_of(text) == [
        "wf.yaml:5: workflow 'w', step 'b': compensation name 'undo' is already used by another"
        " compensation (line 4); give it a name of its own, as replies find their step or"
        " compensation by name",
        "wf.yaml:7: workflow 'w', on_error step 'alert': compensate is for main steps: an"
        " on_error step runs after the job ended, so nothing would undo it; remove 'compensate'"
        " here",
    ]
