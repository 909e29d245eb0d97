"""`fairness: {key, weight}` on a step: compiled and described; without the step's
`concurrency` or `rate`, or with a key that does not compile, `validate` names its line."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError


def test_a_step_fairness_is_compiled_and_described():
    text = (
        "workflows:\n  - name: w\n    steps:\n"
        "      - {name: call, concurrency: 2, fairness: {key: meta.tenant, weight: w}}\n"
    )
    workflows = parse_workflows(text, "wf.yaml")
    fairness = workflows["w"].steps[0].fairness
    assert fairness is not None
    assert fairness.expression.search({"meta": {"tenant": "t"}}) == "t"
    assert fairness.weight_expression is not None
    assert "waiting requests take turns per key 'meta.tenant'" in describe_workflows(workflows)


@pytest.mark.parametrize("limit", ["concurrency: 1", "rate: {limit: 1, per: 1}"])
def test_either_limit_of_the_step_will_do(limit):
    step = f"{{name: call, {limit}, fairness: {{key: k}}}}"
    text = f"workflows:\n  - name: w\n    steps:\n      - {step}\n"
    assert parse_workflows(text, "wf.yaml")["w"].steps[0].fairness is not None


@pytest.mark.parametrize(
    ("fairness", "says"),
    [
        ("{key: k}", "this step has neither; add one (e.g. concurrency: 10)"),
        ("{key: 'a ==', weight: w}", "is not a JMESPath expression"),
        ("{key: k, weight: 'nope('}", "is not a JMESPath expression"),
        ("{weight: w}", "key"),
        ("{key: k, wieght: w}", "did you mean 'weight'?"),
    ],
)
def test_a_bad_step_fairness_is_reported_with_file_and_line(fairness, says):
    limit = "" if "neither" in says else "        concurrency: 2\n"
    text = (
        "workflows:\n  - name: w\n    steps:\n      - name: call\n"
        f"        fairness: {fairness}\n{limit}"
    )
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    problems = info.value.problems
    assert all("'call'" in problem for problem in problems), problems
    assert any(says in problem for problem in problems), problems
