"""`python -m bench --only rate`: opt-in, its workflow valid, its backlog large enough, and
the window arithmetic it reports."""

from __future__ import annotations

import pytest

from bench.cli import OPT_IN, SCENARIOS, _parser
from bench.scenarios import FULL, QUICK
from bench.throttling import LIMIT, PER, WORKFLOW, achieved, backlog_needed, busiest_window
from workflow_manager.config import parse_workflows


def test_rate_is_opt_in():
    assert "rate" in OPT_IN and "rate" not in SCENARIOS
    assert _parser().parse_args(["--only", "rate"]).only == ("rate",)
    assert _parser().parse_args(["--only", "rate,fairness"]).only == ("rate", "fairness")


def test_the_rate_workflow_is_valid_with_the_steps_rate():
    text = WORKFLOW.replace("{p}", "bench.").replace("{limit}", str(LIMIT))
    step = parse_workflows(text.replace("{per}", f"{PER:g}"), "rate.yaml")["ratebench"].steps[0]
    assert step.rate is not None
    assert (step.rate.limit, step.rate.per, step.rate.key) == (LIMIT, PER, None)
    assert step.queue_name == "bench.call"


@pytest.mark.parametrize("plan", [FULL, QUICK], ids=["full", "quick"])
def test_each_runs_backlog_outlasts_its_measurement(plan):
    assert plan.rate_jobs >= backlog_needed(plan.rate_seconds)


def test_the_busiest_window_counts_starts_within_per_seconds():
    assert busiest_window([], 1.0) == 0
    # A start exactly `per` after another is in a window of its own, as the manager counts.
    assert busiest_window([0.0, 0.5, 1.0, 1.5], 1.0) == 2
    assert busiest_window([0.0, 0.9, 0.95, 1.0, 2.5], 1.0) == 3


def test_the_achieved_rate_counts_the_interval_only():
    times = [0.0, 0.1, 1.0, 1.5, 2.0, 2.9, 3.0]
    assert achieved(times, 1.0, 2.0) == 2.0  # 1.0, 1.5, 2.0, 2.9 in [1, 3)
