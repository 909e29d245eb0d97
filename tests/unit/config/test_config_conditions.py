"""`when` on a step: a JMESPath expression, compiled once at load; a bad one names the step."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.config.expressions import ExpressionError, compile_expression, jmespath_truth
from workflow_manager.errors import ConfigError


def _workflow(when: str, where: str = "steps") -> str:
    return (
        "workflows:\n  - name: w\n    steps:\n      - name: a\n"
        f"    {where}:\n      - name: b\n        when: {when}\n"
        if where != "steps"
        else "workflows:\n  - name: w\n    steps:\n      - name: a\n"
        f"      - name: b\n        depends: [a]\n        when: {when}\n"
    )


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (
            '"method != pickup\'"',
            "wf.yaml:7: workflow 'w', step 'b': when: \"method != pickup'\" is not a JMESPath "
            "expression: Unclosed ' delimiter at column 17; close it",
        ),
        (
            "'a =='",
            "wf.yaml:7: workflow 'w', step 'b': when: 'a ==' is not a JMESPath expression: "
            "it is incomplete at column 5; e.g. when: \"shipping_method != 'pickup'\" (text "
            "literals in single quotes, numbers in `1`)",
        ),
        (
            "'lenght(items)'",
            "wf.yaml:7: workflow 'w', step 'b': when: 'lenght(items)' calls unknown function "
            "lenght(); did you mean length()?",
        ),
        ("''", "wf.yaml:7: workflow 'w', step 'b': when: must not be empty"),
        (
            "\"a = 'x'\"",
            "wf.yaml:7: workflow 'w', step 'b': when: \"a = 'x'\" is not a JMESPath expression: "
            "Unknown token '=' at column 3; did you mean '=='?",
        ),
    ],
)
def test_a_bad_expression_is_rejected_naming_file_line_and_step(when: str, expected: str):
    with pytest.raises(ConfigError) as info:
        parse_workflows(_workflow(when), "wf.yaml")
    assert info.value.problems == [expected]


def test_a_bad_expression_in_a_task_step_names_the_task():
    text = (
        "workflows:\n  - name: w\n    steps:\n      - {name: a, task: t}\n    tasks:\n"
        "      - name: t\n        itemListKey: items\n        steps:\n"
        "          - {name: c, when: 'x ||'}\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    (problem,) = info.value.problems
    assert problem.startswith("wf.yaml:9: workflow 'w', task 't', step 'c': when: 'x ||'")


def test_the_condition_is_compiled_at_load_and_part_of_the_hash():
    plain = parse_workflows("workflows: [{name: w, steps: [{name: a}]}]")["w"]
    conditional = parse_workflows("workflows: [{name: w, steps: [{name: a, when: go}]}]")["w"]
    assert plain.content_hash != conditional.content_hash
    assert "condition" in conditional.steps[0].__dict__  # compiled by the loader, once
    assert conditional.steps[0].condition is conditional.steps[0].condition
    assert plain.steps[0].condition is None
    assert "runs when 'go' (else skipped)" in describe_workflows({"w": conditional})


@pytest.mark.parametrize(
    ("value", "truth"),
    [(None, False), (False, False), ("", False), ([], False), ({}, False), (0, True),
     (0.0, True), (True, True), ("x", True), ([0], True), ({"a": None}, True)],
)  # fmt: skip
def test_jmespath_truth(value, truth):
    assert jmespath_truth(value) is truth


def test_an_expression_that_cannot_be_evaluated_says_so():
    with pytest.raises(ExpressionError, match=r"'length\(n\)' cannot be evaluated: .*length"):
        compile_expression("length(n)").holds({"n": 3})


FALLBACKS = """\
workflows:
  - name: w
    defaults: {retries: 2}
    steps:
      - name: a
        fallback: {name: b}
      - name: b
      - name: c
        fallback: {name: d, timeout: 5}
      - name: e
        fallback: {name: d}
    on_error:
      - name: x
        fallback: {name: y}
"""


def test_fallback_names_are_unique_and_only_main_steps_have_one():
    with pytest.raises(ConfigError) as info:
        parse_workflows(FALLBACKS, "wf.yaml")
    assert info.value.problems == [
        "wf.yaml:6: workflow 'w', step 'a': fallback name 'b' is already used by a step (line 7);"
        " give it a name of its own, as replies find their step or fallback by name",
        "wf.yaml:11: workflow 'w', step 'e': fallback name 'd' is already used by another "
        "fallback (line 9); give it a name of its own, as replies find their step or fallback "
        "by name",
        "wf.yaml:14: workflow 'w', on_error step 'x': fallback is for main steps: an on_error "
        "step runs after the job ended, with nothing left to recover; remove 'fallback' here",
    ]


def test_a_fallback_has_its_own_policy_and_queue():
    text = (
        "workflows:\n  - name: w\n    defaults: {retries: 2}\n    steps:\n"
        "      - {name: a, fallback: {name: by-hand, queue: q, timeout: 5, retries: 0}}\n"
    )
    wf = parse_workflows(text)["w"]
    assert wf.policy(wf, "by-hand").timeout_s == 5
    assert wf.policy(wf, "by-hand").retries == 0
    assert wf.steps[0].fallback_step is not None
    assert wf.steps[0].fallback_step.queue_name == "q"
    assert "fallback 'by-hand' (queue 'q', timeout 5s)" in describe_workflows({"w": wf})
