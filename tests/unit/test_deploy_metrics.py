"""deploy/grafana-dashboard.json and deploy/alerts.yml use only metrics and labels /metrics has."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from workflow_manager.engine import (
    Dispatch,
    JobFinished,
    JobStarted,
    ScheduleFired,
    StepFinished,
    StepThrottled,
    StepWaiting,
    ThrottleEnded,
)
from workflow_manager.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"
ALERTS = ROOT / "deploy" / "alerts.yml"
JOB = "00000000-0000-4000-8000-000000000001"
NAME = re.compile(r"\bworkflow_manager_[a-z_]+\b")
# Labels Prometheus adds itself (instance, job) and the histogram bucket bound.
SCRAPE_LABELS = {"instance", "job", "le"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}


class Source:
    connected = True
    publishes_pending = 0


def exposed() -> tuple[set[str], set[str]]:
    """Sample names and label names /metrics shows once every metric has a sample."""
    metrics = Metrics(["wf"])
    metrics.watch(Source())
    metrics.observe(
        [
            JobStarted(JOB, JOB, "wf", "h", "wf", None, {}, 1.0, 1.0),
            Dispatch(JOB, JOB, "s", "q", f"{JOB}:s", {}, "wf", 1),
            StepWaiting(JOB, JOB, "wf", "approve", 1.0),
            StepThrottled(JOB, JOB, "wf", "t", 1.0, 2.0),
            ThrottleEnded(JOB, "wf", "t", 2.0, 1.0),
            ScheduleFired("wf", "nightly", JOB, 1.0),
            StepFinished(JOB, JOB, "wf", "s", 1, "failed", "timeout", "late", 1.0, 2.0),
            JobFinished(JOB, JOB, "wf", "h", "wf", "failed", None, None, None, {}, 1.0, 3.0, {}),
        ]
    )
    metrics.dead_lettered("bad_reply")
    metrics.journal_committed(0.001)
    metrics.rejoined("lease")
    names: set[str] = set()
    labels: set[str] = set(SCRAPE_LABELS)
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            names.add(sample.name)
            labels.update(sample.labels)
    return names, labels


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return exprs


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def labels_used(expr: str) -> set[str]:
    """Label names in `by (...)` / `on (...)` clauses and in `{...}` selectors."""
    found: set[str] = set()
    for clause in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        found.update(name.strip() for name in clause.split(",") if name.strip())
    for selector in re.findall(r"\{([^}]*)\}", expr):
        found.update(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)\s*\"", selector))
    return found - PROMQL_WORDS


@pytest.mark.parametrize("source", ["dashboard", "alerts"])
def test_every_metric_and_label_used_is_exposed(source):
    names, labels = exposed()
    exprs = dashboard_exprs() if source == "dashboard" else [r["expr"] for r in alert_rules()]
    assert exprs
    used = {name for expr in exprs for name in NAME.findall(expr)}
    assert used - names == set(), f"{source} uses metrics /metrics does not have"
    used_labels = {label for expr in exprs for label in labels_used(expr)}
    assert used_labels - labels == set(), f"{source} uses labels no metric has"


def test_the_dashboard_shows_every_metric():
    names, _ = exposed()
    families = {re.sub(r"_(total|bucket|sum|count|created)$", "", n) for n in names}
    shown = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for expr in dashboard_exprs()
        for name in NAME.findall(expr)
    }
    assert families - shown == set()


def test_the_dashboard_panels_are_well_formed():
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["datasource"]["type"] == "prometheus"
        refs = [target["refId"] for target in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert all(key in panel["gridPos"] for key in ("h", "w", "x", "y"))


def test_the_alert_rules_are_well_formed_and_cover_what_operators_need():
    rules = alert_rules()
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        assert rule["annotations"]["summary"]
        assert re.fullmatch(r"\d+[smh]", rule.get("for", "0s")), rule["alert"]
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
    exprs = " ".join(rule["expr"] for rule in rules)
    assert 'jobs_finished_total{status="failed"}' in exprs  # a job failure rate
    assert "workflow_manager_broker_connected == 0" in exprs
    assert "unless" in exprs and "step_requests_total" in exprs  # requests with no reply
    assert "rejoins_total" in exprs  # a manager that lost its leases or its database
