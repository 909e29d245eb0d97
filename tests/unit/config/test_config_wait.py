"""Waiting steps in the workflow YAML: `wait: true` (with an optional `timeout`) and its errors."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError
from workflow_manager.settings import step_queues

GOOD = """\
workflows:
  - name: approve
    defaults: {retries: 2, timeout: 5}
    steps:
      - name: fetch
      - name: approval
        wait: true
        timeout: 86400
        depends: [fetch]
      - {name: apply, depends: [approval]}
"""


def test_a_waiting_step_has_no_queue_and_only_its_own_timeout():
    workflows = parse_workflows(GOOD, "wf.yaml")
    approval = workflows["approve"].steps[1]
    assert approval.wait and approval.timeout == 86400
    assert step_queues(workflows.values()) == ["fetch", "apply"]
    text = describe_workflows(workflows)
    assert "step 'approval': depends on fetch; waits for a signal; fails after 86400s" in text


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("queue: q", "queue"),
        ("retries: 3", "retries"),
        ("retry_backoff: {initial: 1}", "retry_backoff"),
        ("compensate: {name: undo}", "compensate"),
        ("fallback: {name: fb}", "fallback"),
        ("output_schema: {type: object}", "output_schema"),
    ],
)
def test_what_a_waiting_step_cannot_have_is_reported_with_file_and_line(extra, key):
    text = "workflows:\n  - name: w\n    steps:\n      - name: a\n        wait: true\n"
    text += f"        {extra}\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    assert info.value.problems == [
        f"wf.yaml:6: workflow 'w', step 'a': a step with 'wait: true' sends no request "
        f"and is never retried, so '{key}' makes no sense with it (a 'timeout' may end the wait)"
    ]


def test_wait_must_be_a_boolean():
    text = "workflows:\n  - name: w\n    steps:\n      - {name: a, wait: 'yes'}\n"
    with pytest.raises(ConfigError) as info:
        parse_workflows(text, "wf.yaml")
    assert "wait" in info.value.problems[0]
