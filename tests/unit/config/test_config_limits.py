"""`limits:` (nested limits) in the workflow file: what loads, and every mistake's message."""

from __future__ import annotations

import pytest

from workflow_manager.cli import main
from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_limits
from workflow_manager.config.joblimits import load_limits
from workflow_manager.errors import ConfigError

WORKFLOWS = """\
workflows:
  - name: orders
    steps: [{name: work}]
  - name: invoices
    steps: [{name: work}]
"""
GOOD = (
    """\
limits:
  - {name: global, limit: 100}
  - {name: per-tenant, limit: 10, key: meta.tenant}
  - {name: orders, limit: 5, workflows: [orders]}
"""
    + WORKFLOWS
)


def problems(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_workflows(text, "w.yaml")
    return str(caught.value)


def with_limits(*entries: str) -> str:
    """The workflows with `entries` as their `limits:`."""
    return "limits:\n" + "".join(f"  - {e}\n" for e in entries) + WORKFLOWS


def test_a_good_file_loads_its_limits_in_file_order(tmp_path):
    assert set(parse_workflows(GOOD)) == {"orders", "invoices"}
    path = tmp_path / "w.yaml"
    path.write_text(GOOD)
    glob, tenant, orders = load_limits(path)
    assert (glob.name, glob.limit, glob.key, glob.workflows) == ("global", 100, None, None)
    assert tenant.key_of({"meta": {"tenant": "acme"}}) == '"acme"'
    assert tenant.key_of({}) == glob.key_of({}) == "null"
    assert (orders.applies_to("orders"), orders.applies_to("invoices")) == (True, False)
    assert glob.applies_to("invoices")


def test_a_file_without_limits_has_none(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(WORKFLOWS)
    assert load_limits(path) == ()


def test_validate_describes_each_limit(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(GOOD)
    assert describe_limits(load_limits(path)).splitlines() == [
        "limit 'global': at most 100 running jobs of every workflow",
        "limit 'per-tenant': at most 10 running jobs of every workflow per key 'meta.tenant'",
        "limit 'orders': at most 5 running jobs of orders",
    ]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            ["{name: a, limit: 1}", "{name: b, limit: 2}", "{name: a, limit: 3}"],
            "w.yaml:4: limit 'a': duplicate limit name 'a' (limit #1, line 2, and limit #3); "
            "give each limit a name of its own",
        ),
        (
            ["{name: a, limit: 0}"],
            "w.yaml:2: limit 'a': limit: must be at least 1, got 0 (a number)",
        ),
        (
            ['{name: a, limit: "10"}'],
            "w.yaml:2: limit 'a': limit: expected a whole number, got '10'; write 10, without "
            "quotes or units",
        ),
        (
            ["{name: a, limit: 2.5}"],
            "w.yaml:2: limit 'a': limit: expected a whole number, got 2.5 (a number)",
        ),
        (
            ["{name: a, limit: 1, workflows: [invoices, order]}"],
            "w.yaml:2: limit 'a': workflows[1]: unknown workflow 'order' (known: orders, "
            "invoices); did you mean 'orders'?",
        ),
        (
            ["{name: a, limit: 1, kee: meta.tenant}"],
            "w.yaml:2: limit 'a': unknown field 'kee' (allowed: name, limit, key, workflows); "
            "did you mean 'key'?",
        ),
        (
            ["{limit: 1}"],
            "w.yaml:2: limit #1: missing required field 'name'",
        ),
    ],
)
def test_each_mistake_is_named_with_its_line(entries: list[str], message: str):
    assert message in problems(with_limits(*entries)).splitlines()


def test_a_key_that_is_no_expression_is_refused():
    text = problems(with_limits("{name: a, limit: 1, key: 'meta.[tenant'}"))
    assert text.startswith("w.yaml:2: limit 'a': key: ")


def test_validate_lists_the_limits_and_fails_on_an_unknown_workflow(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(GOOD)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "limit 'per-tenant': at most 10 running jobs of every workflow per key" in out
    assert "OK, 2 workflow(s)" in out
    path.write_text(GOOD.replace("workflows: [orders]", "workflows: [ordres]"))
    assert main(["validate", str(path)]) == 1
    assert "unknown workflow 'ordres'" in capsys.readouterr().err
