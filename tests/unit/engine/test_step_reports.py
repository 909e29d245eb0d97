"""StepFinished: how each step (attempt) ended, reported for events and metrics."""

from __future__ import annotations

import pytest

from workflow_manager.engine import StepFinished

from .helpers import JOB, cid, fire, make_state, of_type, reply, submit, the_timer

FLOW = """
workflows:
  - name: w
    steps:
      - {name: a, retries: 1, retry_backoff: {initial: 1, multiplier: 1, max: 1}, timeout: 5}
      - {name: b, depends: [a]}
      - {name: fan, task: t, depends: [b]}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
"""


def _state():
    state = make_state(FLOW)
    submit(state, "w", at=1.0)
    return state


def _report(commands) -> StepFinished:
    (report,) = of_type(commands, StepFinished)
    return report


@pytest.mark.parametrize(
    ("answer", "reason"),
    [({"error": "disk full"}, "error"), ({"body": b"[1]"}, "invalid_reply")],
)
def test_a_failed_attempt_with_a_retry_left_is_retrying_with_its_reason(answer, reason):
    state = _state()
    commands = reply(state, cid(JOB, "a"), answer.get("body", b""), error=answer.get("error"),
                     at=3.0)  # fmt: skip
    report = _report(commands)
    assert (report.step, report.attempt, report.outcome, report.reason) == (
        "a", 1, "retrying", reason,
    )  # fmt: skip
    assert (report.dispatched_at, report.at) == (1.0, 3.0)
    assert (report.root_id, report.workflow) == (JOB, "w")
    assert report.message


def test_a_timeout_with_no_retry_left_fails_the_step_with_reason_timeout():
    state = _state()
    reply(state, cid(JOB, "a"), error="boom", at=2.0)
    timer = next(k for k in state.timers if k.startswith("retry"))
    fire(state, timer, 3.0)  # attempt 2 goes out at 3.0
    deadline = next(k for k in state.timers if k.startswith("timeout"))
    report = _report(fire(state, deadline, 8.0))
    assert (report.attempt, report.outcome, report.reason) == (2, "failed", "timeout")
    assert report.dispatched_at == 3.0


def test_completed_steps_and_task_steps_report_completed_with_no_reason():
    state = _state()
    report = _report(reply(state, cid(JOB, "a"), {"x": 1}, at=2.0))
    assert (report.step, report.outcome, report.reason, report.message) == (
        "a", "completed", None, None,
    )  # fmt: skip
    commands = reply(state, cid(JOB, "b"), {"items": []}, at=4.0)
    done = {r.step: r for r in of_type(commands, StepFinished)}
    assert done["b"].outcome == "completed"
    # The empty fan-out completes at once: a task step reports from when it started.
    assert (done["fan"].outcome, done["fan"].dispatched_at, done["fan"].attempt) == (
        "completed", 4.0, 0,
    )  # fmt: skip


def test_a_child_step_reports_under_the_top_level_workflow_and_job():
    state = _state()
    reply(state, cid(JOB, "a"), {}, at=2.0)
    commands = reply(state, cid(JOB, "b"), {"items": [1]}, at=3.0)
    child = state.jobs[JOB].steps["fan"].children[0]
    assert of_type(commands, StepFinished)[-1].step == "b"  # the fan-out itself: no report yet
    commands = reply(state, cid(child, "leaf"), {}, at=4.0)
    reports = {r.step: r for r in of_type(commands, StepFinished)}
    assert (reports["leaf"].job_id, reports["leaf"].root_id, reports["leaf"].workflow) == (
        child, JOB, "w",
    )  # fmt: skip
    assert (reports["fan"].job_id, reports["fan"].dispatched_at) == (JOB, 3.0)


def test_the_retry_timer_is_the_only_other_effect_of_a_retrying_attempt():
    state = _state()
    commands = reply(state, cid(JOB, "a"), error="boom", at=2.0)
    assert the_timer(commands).key.startswith("retry")
