"""`python -m bench --only reduce`: opt-in, and its workflow is valid."""

from __future__ import annotations

from bench.cli import OPT_IN, SCENARIOS, _parser
from bench.reducing import BATCH, WORKFLOW
from workflow_manager.config import parse_workflows


def test_reduce_is_opt_in():
    assert "reduce" in OPT_IN and "reduce" not in SCENARIOS
    assert _parser().parse_args(["--only", "reduce"]).only == ("reduce",)


def test_the_reduce_workflow_is_valid():
    text = WORKFLOW.replace("{p}", "bench.").replace("{batch}", str(BATCH))
    step = parse_workflows(text, "reduce.yaml")["reducebench"].steps[0]
    assert step.reduce is not None and step.reduce.batch == BATCH
    assert step.reduce_step is not None and step.reduce_step.queue_name == "bench.total"
