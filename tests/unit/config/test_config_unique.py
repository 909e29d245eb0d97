"""`unique: {key: <JMESPath>}` on a workflow: compiled at load; a bad key names its line."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError


def test_a_unique_key_is_compiled_and_described():
    text = "workflows:\n  - name: w\n    unique: {key: account.id}\n    steps: [{name: a}]\n"
    workflows = parse_workflows(text, "wf.yaml")
    unique = workflows["w"].unique
    assert unique is not None and unique.expression.search({"account": {"id": 7}}) == 7
    assert "one unfinished job per key 'account.id'" in describe_workflows(workflows)


@pytest.mark.parametrize(
    ("unique", "says"),
    [
        ("{key: 'account =='}", "is not a JMESPath expression"),
        ("{key: ''}", "key"),
        ("{keys: account}", "unknown field 'keys'"),
    ],
)
def test_a_bad_unique_key_is_reported_with_file_and_line(unique, says):
    text = f"workflows:\n  - name: w\n    steps: [{{name: a}}]\n    unique: {unique}\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    problems = info.value.problems
    assert all(problem.startswith("wf.yaml:4: workflow 'w': ") for problem in problems)
    assert any(says in problem for problem in problems), problems
