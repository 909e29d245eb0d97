"""Which failure policy a step gets: its own setting, else its task's `defaults:`, else the
workflow's `defaults:` (retries, retry_backoff and timeout each on their own)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.engine.helpers import (
    JOB,
    child_id,
    cid,
    dispatches,
    fire,
    make_state,
    of_type,
    reply,
    submit,
    the_timer,
    timers_started,
)
from workflow_manager.engine import EngineState, JobStatus, StartTimer, StepStatus


def _policy_yaml(
    workflow_defaults: dict[str, Any] | None,
    task_defaults: dict[str, Any] | None,
    step: dict[str, Any],
) -> str:
    """A workflow whose top step `top` and child step `leaf` both carry `step`'s settings."""

    def block(indent: str, values: dict[str, Any] | None) -> str:
        if values is None:
            return ""
        lines = [f"{indent}defaults:"] + [f"{indent}  {k}: {v}" for k, v in values.items()]
        return "\n".join(lines) + "\n"

    settings = "".join(f"\n        {k}: {v}" for k, v in step.items())
    return (
        "workflows:\n  - name: w\n"
        + block("    ", workflow_defaults)
        + "    steps:\n      - name: top"
        + settings
        + "\n      - name: fan\n        task: t\n"
        + "    tasks:\n      - name: t\n        itemListKey: items\n"
        + block("        ", task_defaults)
        + "        steps:\n          - name: leaf"
        + settings.replace("\n        ", "\n            ")
        + "\n"
    )


def _attempts_until_failed(state: EngineState, job_id: str, step: str, at: float) -> int:
    """Fail every attempt of a step (firing each retry timer) until it fails; the attempt count."""
    attempts = 1
    while True:
        commands = reply(state, cid(job_id, step), error="boom", at=at)
        started = of_type(commands, StartTimer)
        if not started:
            assert state.jobs[job_id].steps[step].status is StepStatus.FAILED
            return attempts
        assert state.jobs[job_id].steps[step].status is StepStatus.RETRYING
        assert dispatches(commands) == []
        (timer,) = started
        at = timer.due_at
        (again,) = dispatches(fire(state, timer.key, at))
        attempts += 1
        assert (again.step, again.attempt) == (step, attempts)


@pytest.mark.parametrize(
    ("workflow_defaults", "task_defaults", "step", "top_retries", "leaf_retries"),
    [
        (None, None, {}, 0, 0),
        ({"retries": 2}, None, {}, 2, 2),
        ({"retries": 2}, {"retries": 1}, {}, 2, 1),
        ({"retries": 2}, {"retries": 0}, {}, 2, 0),
        ({"retries": 2}, {"retries": 1}, {"retries": 3}, 3, 3),
        ({"retries": 2}, {"retries": 1}, {"retries": 0}, 0, 0),
        (None, {"retries": 1}, {}, 0, 1),
        (None, {"timeout": 5}, {"retries": 1}, 1, 1),
    ],
)
def test_retries_come_from_the_step_then_task_defaults_then_workflow_defaults(
    workflow_defaults, task_defaults, step, top_retries, leaf_retries
):
    state = make_state(_policy_yaml(workflow_defaults, task_defaults, step))
    submit(state, "w", {"items": ["x"]})
    kid = child_id(JOB, "fan", 0)
    assert _attempts_until_failed(state, kid, "leaf", 10.0) == leaf_retries + 1
    # the child's failure failed `fan` and the job; `top` is still there to count on its own
    state = make_state(_policy_yaml(workflow_defaults, task_defaults, step))
    submit(state, "w", {"items": []})
    assert _attempts_until_failed(state, JOB, "top", 10.0) == top_retries + 1
    assert state.jobs[JOB].status is JobStatus.FAILED


def _first_wait(text: str, job_id: str, step: str, at: float = 10.0) -> float:
    state = make_state(text)
    submit(state, "w", {"items": ["x"]})
    return the_timer(reply(state, cid(job_id, step), error="boom", at=at)).due_at - at


@pytest.mark.parametrize(
    ("workflow_defaults", "task_defaults", "step", "top_max", "leaf_max"),
    [
        (
            {"retries": 1, "retry_backoff": "{initial: 100, max: 100}"},
            {"retry_backoff": "{initial: 10, max: 10}"},
            {},
            100,
            10,
        ),
        (
            {"retries": 1, "retry_backoff": "{initial: 100, max: 100}"},
            {"retry_backoff": "{initial: 10, max: 10}"},
            {"retry_backoff": "{initial: 1, max: 1}"},
            1,
            1,
        ),
        ({"retries": 1}, None, {}, 1, 1),  # the default backoff: initial 1 s
    ],
)
def test_backoff_comes_from_the_step_then_task_defaults_then_workflow_defaults(
    workflow_defaults, task_defaults, step, top_max, leaf_max
):
    text = _policy_yaml(workflow_defaults, task_defaults, step)
    top = _first_wait(text, JOB, "top")
    leaf = _first_wait(text, child_id(JOB, "fan", 0), "leaf")
    assert top_max / 2 <= top <= top_max
    assert leaf_max / 2 <= leaf <= leaf_max


@pytest.mark.parametrize(
    ("workflow_defaults", "task_defaults", "step", "top_timeout", "leaf_timeout"),
    [
        (None, None, {}, None, None),
        ({"timeout": 30}, None, {}, 30, 30),
        ({"timeout": 30}, {"timeout": 7}, {}, 30, 7),
        ({"timeout": 30}, {"timeout": 7}, {"timeout": 2.5}, 2.5, 2.5),
        (None, {"timeout": 7}, {}, None, 7),
    ],
)
def test_timeouts_come_from_the_step_then_task_defaults_then_workflow_defaults(
    workflow_defaults, task_defaults, step, top_timeout, leaf_timeout
):
    state = make_state(_policy_yaml(workflow_defaults, task_defaults, step))
    commands = submit(state, "w", {"items": ["x"]}, at=100.0)
    deadlines = sorted(timers_started(commands).values())
    expected = sorted(100.0 + t for t in (top_timeout, leaf_timeout) if t is not None)
    assert deadlines == expected
