"""`python -m bench --only`: the fairness scenario runs only when named."""

from __future__ import annotations

import argparse

import pytest

from bench.cli import OPT_IN, SCENARIOS, _parser, _scenarios
from bench.fairness import WORKFLOW
from workflow_manager.config import parse_workflows


def test_fairness_is_opt_in():
    assert "fairness" in OPT_IN and "fairness" not in SCENARIOS
    assert _parser().parse_args([]).only == SCENARIOS
    assert _parser().parse_args(["--only", "fairness,fork"]).only == ("fairness", "fork")
    with pytest.raises(argparse.ArgumentTypeError, match="known: .*bulk, fairness"):
        _scenarios("fairnes")


def test_the_fairness_workflow_is_valid_with_a_step_key():
    text = WORKFLOW.replace("{p}", "p.").replace("{n}", "100").replace("{slots}", "10")
    step = parse_workflows(text, "fairness.yaml")["fairbench"].tasks[0].steps[0]
    assert step.concurrency == 10
    assert step.fairness is not None and step.fairness.key == "meta.tenant"
