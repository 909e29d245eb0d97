"""`rate: {limit, per, key}` on a step: compiled and described; a bad limit or window, a rate on
a task step, or a misspelt field, names its line (with a did-you-mean for the field)."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError


def test_a_rate_is_compiled_and_described():
    text = (
        "workflows:\n  - name: w\n    steps:\n"
        "      - {name: call, rate: {limit: 50, per: 1, key: meta.tenant}}\n"
    )
    workflows = parse_workflows(text, "wf.yaml")
    rate = workflows["w"].steps[0].rate
    assert rate is not None and (rate.limit, rate.per) == (50, 1.0)
    assert rate.key_of({"meta": {"tenant": "t"}}) == '"t"'
    assert rate.key_of({}) == "null"
    described = describe_workflows(workflows)
    assert "at most 50 requests started in any 1s per key 'meta.tenant'" in described


@pytest.mark.parametrize(
    ("rate", "says"),
    [
        ("{limit: 0, per: 1}", "rate.limit: must be at least 1, got 0"),
        ("{limit: 10001, per: 1}", "rate.limit: must be at most 10000"),
        ("{limit: 1.5, per: 1}", "limit"),
        ("{limit: 5, per: 0}", "rate.per: must be more than 0"),
        ("{limit: 5, per: 86401}", "rate.per: must be at most 86400"),
        ("{limit: 5, per: '2'}", "per"),
        ("{limit: 5, per: .inf}", "per"),
        ("{per: 2}", "limit"),
        ("{limit: 5}", "per"),
        ("{limit: 5, per: 2, key: 'a =='}", "is not a JMESPath expression"),
        ("{limit: 5, per: 2, kye: a}", "did you mean 'key'?"),
        ("{limit: 5, pre: 2}", "did you mean 'per'?"),
    ],
)
def test_a_bad_rate_is_reported_with_file_and_line(rate, says):
    text = f"workflows:\n  - name: w\n    steps:\n      - name: call\n        rate: {rate}\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    problems = info.value.problems
    assert all(problem.startswith("wf.yaml:5: ") for problem in problems), problems
    assert all("'call'" in problem for problem in problems), problems
    assert any(says in problem for problem in problems), problems


def test_a_task_step_has_no_rate():
    text = (
        "workflows:\n  - name: w\n    steps:\n"
        "      - {name: fan, task: t, rate: {limit: 1, per: 1}}\n"
        "    tasks:\n      - {name: t, itemListKey: items, steps: [{name: x}]}\n"
    )
    with pytest.raises(ConfigError, match="put the rate on the steps of its task"):
        parse_workflows(text, "wf.yaml")
