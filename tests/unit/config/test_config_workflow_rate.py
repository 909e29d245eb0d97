"""`rate: {limit, per, key}` on a workflow: compiled and described; a bad limit, window or key,
or a misspelt field, names its line and its workflow."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError


def test_a_workflow_rate_is_compiled_and_described():
    text = (
        "workflows:\n  - name: w\n    rate: {limit: 10, per: 60, key: meta.tenant}\n"
        "    steps: [{name: call}]\n"
    )
    workflows = parse_workflows(text, "wf.yaml")
    rate = workflows["w"].rate
    assert rate is not None and (rate.limit, rate.per) == (10, 60.0)
    assert rate.key_of({"meta": {"tenant": "t"}}) == '"t"'
    described = describe_workflows(workflows)
    assert "rate: at most 10 jobs started in any 60s per key 'meta.tenant'" in described
    assert parse_workflows(text.replace("rate:", "concurrency: {limit: 1}\n    rate:"))["w"].rate


@pytest.mark.parametrize(
    ("rate", "says"),
    [
        ("{limit: 0, per: 1}", "rate.limit: must be at least 1, got 0"),
        ("{limit: 10001, per: 1}", "rate.limit: must be at most 10000"),
        ("{limit: 5, per: 0}", "rate.per: must be more than 0"),
        ("{limit: 5, per: 86401}", "rate.per: must be at most 86400"),
        ("{limit: 5}", "per"),
        ("{limit: 5, per: 2, key: 'a =='}", "is not a JMESPath expression"),
        ("{limit: 5, per: 2, kye: a}", "did you mean 'key'?"),
        ("5", "rate: expected a mapping"),
    ],
)
def test_a_bad_workflow_rate_is_reported_with_file_and_line(rate, says):
    text = f"workflows:\n  - name: w\n    rate: {rate}\n    steps: [{{name: call}}]\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    problems = info.value.problems
    assert all(problem.startswith("wf.yaml:3: workflow 'w': ") for problem in problems), problems
    assert any(says in problem for problem in problems), problems
