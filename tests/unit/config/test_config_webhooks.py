"""`webhooks:` and `triggers:` in the workflow file: what loads, and every mistake's message."""

from __future__ import annotations

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.webhooks import DEFAULT_TOLERANCE_S, load_webhooks
from workflow_manager.errors import ConfigError

GOOD = """\
webhooks:
  - {name: github, secret_env: GH_SECRET, signature: github}
  - {name: shop, secret_env: SHOP_SECRET, signature: stripe, tolerance_s: 60}
workflows:
  - name: on-push
    triggers:
      - webhook: github
        when: "ref == 'refs/heads/main'"
        payload: "{commit: after}"
    steps: [{name: build}]
"""


def problems(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_workflows(text, "w.yaml")
    return str(caught.value)


def test_a_good_file_loads_webhooks_and_triggers(tmp_path):
    workflow = parse_workflows(GOOD)["on-push"]
    (trigger,) = workflow.triggers
    assert (trigger.webhook, trigger.when, trigger.payload) == (
        "github", "ref == 'refs/heads/main'", "{commit: after}",
    )  # fmt: skip
    assert trigger.mapping is not None
    assert trigger.mapping.search({"after": "abc"}) == {"commit": "abc"}
    path = tmp_path / "w.yaml"
    path.write_text(GOOD)
    github, shop = load_webhooks(path)
    assert (github.name, github.signature, github.tolerance_s) == (
        "github", "github", DEFAULT_TOLERANCE_S,
    )  # fmt: skip
    assert (shop.secret_env, shop.tolerance_s) == ("SHOP_SECRET", 60)


def test_a_file_without_webhooks_has_none(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("workflows: [{name: w, steps: [{name: a}]}]\n")
    assert load_webhooks(path) == ()


def test_unknown_webhook_names_the_workflow_line_and_suggests():
    text = GOOD.replace("- webhook: github", "- webhook: githb")
    assert problems(text) == (
        "w.yaml:7: workflow 'on-push': triggers[0].webhook: unknown webhook 'githb' "
        "(declared: github, shop); did you mean 'github'?"
    )


def test_trigger_without_any_webhook_declared():
    text = "workflows:\n  - name: w\n    triggers: [{webhook: gh}]\n    steps: [{name: a}]\n"
    message = problems(text)
    assert "unknown webhook 'gh'" in message
    assert "add it under 'webhooks:' at the top of the file" in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "when: \"ref == 'refs/heads/main'\"",
            "when: \"ref = 'refs/heads/main'\"",
            "triggers[0].when: \"ref = 'refs/heads/main'\" is not a JMESPath expression: "
            "Unknown token '=' at column 5; did you mean '=='?",
        ),
        (
            'payload: "{commit: after}"',
            'payload: "{commit: after"',
            "triggers[0].payload: '{commit: after' is not a JMESPath expression",
        ),
        (
            'payload: "{commit: after}"',
            'payload: "lenght(after)"',
            "calls unknown function lenght(); did you mean length()?",
        ),
        (
            "        when:",
            "        wehn:",
            "unknown field 'wehn' (allowed: webhook, when, payload)",
        ),
    ],
)
def test_bad_trigger_expressions(old, new, expected):
    assert expected in problems(GOOD.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "signature: stripe",
            "signature: sha256",
            "w.yaml:3: webhook 'shop': signature: expected one of 'hmac-sha256', 'github' or "
            "'stripe', got 'sha256'",
        ),
        ("tolerance_s: 60", "tolerance_s: 0", "webhook 'shop': tolerance_s"),
        ("tolerance_s: 60", "tolerance: 60", "did you mean 'tolerance_s'?"),
        ("secret_env: GH_SECRET", "secret_env: gh-secret", "webhook 'github': secret_env"),
        (
            "signature: github}",
            "signature: github, tolerance_s: 60}",
            "GitHub signs no timestamp",
        ),
        ("  - {name: shop", "  - {name: github", "webhook 'github' is declared twice"),
    ],
)
def test_bad_webhook_entries(old, new, expected):
    assert expected in problems(GOOD.replace(old, new))
