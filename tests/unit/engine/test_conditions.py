"""`when`: a step runs only when its JMESPath condition over its input is true, else is skipped."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.engine.helpers import (
    JOB,
    child_id,
    cid,
    dispatched_steps,
    dispatches,
    finished,
    make_state,
    of_type,
    reply,
    retry_job,
    run,
    submit,
)
from workflow_manager.engine import JobStatus, StepFinished, StepStatus

DIAMOND = """
workflows:
  - name: w
    steps:
      - name: start
      - name: ship
        depends: [start]
        when: "shipping_method != 'pickup'"
      - name: pack
        depends: [start]
      - name: join
        depends: [ship, pack]
"""

TASK = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        when: "length(items) > `2`"
      - name: after
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: each
"""


def _echo(step_outputs: dict[str, dict[str, Any]]):
    def answer(request) -> dict[str, Any]:
        return step_outputs.get(request.step, {**request.body, f"by_{request.step}": True})

    return answer


def test_a_false_condition_skips_the_branch_and_the_join_gets_the_other_output():
    state = make_state(DIAMOND)
    commands = submit(state, payload={"shipping_method": "pickup"})
    log = run(state, commands, _echo({}))
    job = state.jobs[JOB]
    assert "ship" not in dispatched_steps(log)
    assert job.steps["ship"].status is StepStatus.SKIPPED
    assert job.steps["ship"].output == {}
    join = next(d for d in dispatches(log) if d.step == "join")
    assert join.body == {"shipping_method": "pickup", "by_start": True, "by_pack": True}
    assert job.status is JobStatus.COMPLETED
    skipped = [c for c in of_type(log, StepFinished) if c.outcome == "skipped"]
    assert [(c.step, c.attempt) for c in skipped] == [("ship", 0)]


def test_a_true_condition_runs_the_step():
    state = make_state(DIAMOND)
    log = run(state, submit(state, payload={"shipping_method": "post"}), _echo({}))
    assert dispatched_steps(log).count("ship") == 1
    assert state.jobs[JOB].steps["ship"].status is StepStatus.COMPLETED


@pytest.mark.parametrize(
    ("when", "payload", "runs"),
    [
        ("flag", {"flag": 0}, True),  # JMESPath: numbers are true, 0 too
        ("flag", {"flag": False}, False),
        ("flag", {"flag": ""}, False),
        ("flag", {"flag": []}, False),
        ("flag", {"flag": {}}, False),
        ("flag", {}, False),  # a missing key is null
        ("flag", {"flag": "no"}, True),
        ("items[?v > `1`]", {"items": [{"v": 1}, {"v": 2}]}, True),
    ],
)
def test_jmespath_truth_decides(when: str, payload: dict[str, Any], runs: bool):
    state = make_state(f"workflows: [{{name: w, steps: [{{name: a, when: '{when}'}}]}}]")
    commands = submit(state, payload=payload)
    assert (dispatched_steps(commands) == ["a"]) is runs
    if not runs:
        assert finished(commands).status == "completed"
        assert finished(commands).result == {}


def test_a_skipped_task_step_starts_no_child_and_its_dependent_gets_an_empty_input():
    state = make_state(TASK)
    commands = submit(state, payload={"items": [1, 2]})
    assert dispatched_steps(commands) == ["after"]
    assert dispatches(commands)[0].body == {}
    assert child_id(JOB, "fan", 0) not in state.jobs
    assert state.jobs[JOB].steps["fan"].status is StepStatus.SKIPPED


def test_a_true_condition_fans_the_task_step_out():
    state = make_state(TASK)
    commands = submit(state, payload={"items": [1, 2, 3]})
    assert dispatched_steps(commands) == ["each", "each", "each"]


def test_a_condition_that_cannot_be_evaluated_fails_the_step():
    state = make_state(TASK)
    commands = submit(state, payload={"items": 5})
    done = finished(commands)
    assert done.status == "failed"
    assert done.error["step"] == "fan"
    assert "length()" in done.error["message"] and "cannot be evaluated" in done.error["message"]


def test_a_retried_job_keeps_its_skipped_steps():
    text = """
workflows:
  - name: w
    steps:
      - {name: a, when: "go"}
      - {name: b}
      - {name: c, depends: [a, b]}
"""
    state = make_state(text)
    submit(state, payload={"go": False})
    reply(state, cid(JOB, "b"), error="boom")
    assert state.jobs[JOB].status is JobStatus.FAILED
    commands = retry_job(state)
    assert dispatched_steps(commands) == ["b"]
    commands = reply(state, cid(JOB, "b"), {"b": 1})
    assert dispatched_steps(commands) == ["c"]
    assert state.jobs[JOB].steps["a"].status is StepStatus.SKIPPED
