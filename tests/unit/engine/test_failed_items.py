"""Failing children: after their own retries they fail the task step, unless max_failed_items
accepts them, as null results listed under `failed_items`."""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    child_id,
    cid,
    dispatches,
    finished,
    fire,
    make_state,
    reply,
    submit,
    the_timer,
)
from workflow_manager.engine import EngineState, JobStatus, StepStatus

TOLERANT = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
      - name: after
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        max_failed_items: {n}
        defaults:
          retries: 1
          retry_backoff: {{initial: 1, max: 1}}
        steps:
          - name: leaf
"""
SIZE = 5
KIDS = [child_id(JOB, "fan", i) for i in range(SIZE)]


def _fanned(n: int) -> EngineState:
    state = make_state(TOLERANT.format(n=n))
    submit(state, "w", {"items": list(range(SIZE)), "keep": True}, at=1.0)
    return state


def _fail_child(state: EngineState, index: int, at: float) -> list:
    """Fail both attempts of a child's only step; the commands of the last failure."""
    kid = KIDS[index]
    retry = the_timer(reply(state, cid(kid, "leaf"), error=f"bad {index}", at=at))
    (again,) = dispatches(fire(state, retry.key, retry.due_at))
    assert again.attempt == 2
    assert state.jobs[kid].is_running  # the child retried before failing
    commands = reply(state, cid(kid, "leaf"), error=f"still bad {index}", at=retry.due_at)
    assert finished(commands, kid).status == JobStatus.FAILED
    return commands


def _complete_child(state: EngineState, index: int) -> list:
    return reply(state, cid(KIDS[index], "leaf"), {"item": f"r{index}", "side": index}, at=9.0)


@pytest.mark.parametrize(
    ("allowed", "failing"),
    [(1, [2]), (2, [3, 0]), (3, [4, 1, 0]), (5, [4, 3, 2, 1, 0]), (3, [1])],
)
def test_accepted_failures_gather_as_null_and_are_listed_in_element_order(allowed, failing):
    state = _fanned(allowed)
    at, last = 2.0, []
    for index in failing:
        last = _fail_child(state, index, at)
        at += 2
        assert state.jobs[JOB].status is JobStatus.RUNNING
    for index in sorted(set(range(SIZE)) - set(failing)):
        last = _complete_child(state, index)

    run = state.jobs[JOB].steps["fan"]
    assert run.status is StepStatus.COMPLETED
    expected_items = [None if i in failing else f"r{i}" for i in range(SIZE)]
    assert run.output["items"] == expected_items
    assert run.output["failed_items"] == [
        {
            "index": i,
            "id": KIDS[i],
            "error": {"step": "leaf", "message": f"still bad {i}"},
        }
        for i in sorted(failing)
    ]
    if len(failing) < SIZE:
        assert run.output["side"] == min(set(range(SIZE)) - set(failing))
    (after,) = dispatches(last)[-1:]
    assert (after.step, after.body) == ("after", run.output)


@pytest.mark.parametrize(("allowed", "failing"), [(0, [2]), (1, [3, 0]), (2, [3, 1, 0])])
def test_one_failure_more_than_allowed_fails_the_step_and_cancels_the_rest(allowed, failing):
    state = _fanned(allowed)
    assert SIZE - 1 not in failing
    _complete_child(state, SIZE - 1)
    at = 2.0
    for index in failing[:-1]:
        _fail_child(state, index, at)
        at += 2
    commands = _fail_child(state, failing[-1], at)

    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error["step"] == "fan"
    assert KIDS[failing[-1]] in done.error["message"]
    assert f"still bad {failing[-1]}" in done.error["message"]
    assert state.jobs[JOB].steps["fan"].status is StepStatus.FAILED
    for index in range(SIZE):
        if index == SIZE - 1:
            assert KIDS[index] not in state.jobs  # completed: out of memory
            continue
        status = state.jobs[KIDS[index]].status
        if index in failing:
            assert status is JobStatus.FAILED
        else:
            assert status is JobStatus.CANCELLED
            assert finished(commands, KIDS[index]).status == JobStatus.CANCELLED
    assert state.timers == {}


def test_without_max_failed_items_the_first_failed_child_fails_the_step():
    text = TOLERANT.replace("        max_failed_items: {n}\n", "")
    state = make_state(text.format())
    submit(state, "w", {"items": list(range(SIZE))}, at=1.0)
    commands = _fail_child(state, 3, 2.0)
    assert finished(commands).error["step"] == "fan"
