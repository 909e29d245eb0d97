"""`debounce: {key, period, mode}` on a workflow: compiled and described; a bad key, period or
mode, or a misspelt field, names its line (with a did-you-mean for the field)."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError


def test_a_debounce_is_compiled_and_described():
    text = (
        "workflows:\n  - name: w\n    debounce: {key: meta.tenant, period: 2, mode: trailing}\n"
        "    steps: [{name: a}]\n"
    )
    workflows = parse_workflows(text, "wf.yaml")
    debounce = workflows["w"].debounce
    assert debounce is not None and (debounce.period, debounce.mode) == (2.0, "trailing")
    assert debounce.expression.search({"meta": {"tenant": "t"}}) == "t"
    described = describe_workflows(workflows)
    assert "debounce: triggers with the same key 'meta.tenant' within 2s of the first" in described
    assert "trailing: it starts when the period ends, with the last payload" in described


def test_the_mode_is_leading_unless_set():
    text = "workflows:\n  - name: w\n    debounce: {key: id, period: 0.5}\n    steps: [{name: a}]\n"
    debounce = parse_workflows(text, "wf.yaml")["w"].debounce
    assert debounce is not None and debounce.mode == "leading"


@pytest.mark.parametrize(
    ("debounce", "says"),
    [
        ("{key: 'order ==', period: 2}", "is not a JMESPath expression"),
        ("{key: order, period: 0}", "greater than 0"),
        ("{key: order, period: -1}", "greater than 0"),
        ("{key: order, period: 86401}", "less than or equal to 86400"),
        ("{key: order, period: '2'}", "period"),
        ("{key: order, period: .inf}", "period"),
        ("{key: order, period: 2, mode: middle}", "'leading' or 'trailing'"),
        ("{key: order}", "period"),
        ("{period: 2}", "key"),
        ("{key: order, period: 2, perod: 3}", "did you mean 'period'?"),
    ],
)
def test_a_bad_debounce_is_reported_with_file_and_line(debounce, says):
    text = f"workflows:\n  - name: w\n    steps: [{{name: a}}]\n    debounce: {debounce}\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    problems = info.value.problems
    assert all(problem.startswith("wf.yaml:4: workflow 'w': ") for problem in problems), problems
    assert any(says in problem for problem in problems), problems
