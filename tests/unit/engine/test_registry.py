"""The rules are parts registered in one list; the core calls each only where it takes part."""

from __future__ import annotations

import inspect
from typing import Any

from tests.unit.engine.helpers import JOB, make_state, submit
from workflow_manager.engine import Dispatch, JobSubmitted, StepStatus
from workflow_manager.engine.extension import Part, Parts, Work
from workflow_manager.engine.registry import PARTS
from workflow_manager.engine.state import Job, StepRun
from workflow_manager.engine.submission import submit as submit_job
from workflow_manager.engine.timers import Timer
from workflow_manager.engine.transition import Transition

POINTS = sorted(
    name for name, member in vars(Part).items()
    if inspect.isfunction(member) and not name.startswith("_")
    and name not in ("timer_fired", "used_by")
)  # fmt: skip


def test_every_point_of_part_has_its_list_in_parts():
    parts = Parts([])
    assert POINTS
    assert all(getattr(parts, point) == () for point in POINTS)


def test_every_registered_part_takes_part_somewhere():
    for part in PARTS.all:
        points = [p for p in POINTS if part in getattr(PARTS, p)]
        assert points or part.timers, type(part).__name__


def test_a_point_lists_only_the_parts_that_override_it_in_registration_order():
    for point in POINTS:
        expected = [p for p in PARTS.all if getattr(type(p), point) is not getattr(Part, point)]
        assert list(getattr(PARTS, point)) == expected


def test_every_timer_class_has_an_owner_and_every_owner_handles_its_timers():
    owned = {timer for part in PARTS.all for timer in part.timers}
    assert owned == set(Timer.__args__)  # type: ignore[attr-defined]
    for timer, owners in PARTS.timer_owners.items():
        assert all(type(o).timer_fired is not Part.timer_fired for o in owners), timer


class _Counting(Part):
    """A new rule: counts the steps that start, and holds back one named 'held'."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def step_starting_held(self, work: Work, job: Job, run: StepRun, data: dict[str, Any]) -> bool:
        self.started.append(run.name)
        if run.name != "held":
            return False
        run.status = StepStatus.WAITING
        return True


def test_a_new_rule_is_one_part_registered_in_the_list():
    state = make_state("workflows:\n  - name: w\n    steps:\n      - name: a\n      - name: held\n")
    counting = _Counting()
    work = Transition(state, 1.0, Parts([*PARTS.all, counting]))
    submit_job(work, JobSubmitted(JOB, "w", {}, 1.0))
    work.drain()
    assert counting.started == ["a", "held"]
    assert [c.step for c in work.commands if isinstance(c, Dispatch)] == ["a"]
    assert state.jobs[JOB].steps["held"].status is StepStatus.WAITING


def test_a_workflow_that_uses_no_feature_meets_no_feature_part_at_the_step_points():
    (plain,) = make_state(
        "workflows:\n  - name: w\n    steps:\n      - name: a\n"
    ).definitions.values()
    parts = PARTS.of(plain)
    assert parts is PARTS.of(plain)  # built once per definition
    for point in (
        "step_starting_held", "dispatch_held", "dispatched", "request_ended",
        "completion_held", "step_completed", "failure_held", "job_stopped", "job_running",
    ):  # fmt: skip
        assert getattr(parts, point) == (), point
    # Metadata patches come with any reply, so every workflow reads them.
    assert [type(p).__name__ for p in parts.reply_problem] == ["Metadata"]


def test_a_workflow_meets_the_parts_of_the_features_it_uses():
    state = make_state(
        """
workflows:
  - name: w
    timeout: 60
    steps:
      - name: a
        when: "flag"
        concurrency: 2
      - name: b
        wait: true
"""
    )
    (wf,) = state.definitions.values()
    starting = [type(p).__name__ for p in PARTS.of(wf).step_starting_held]
    assert starting == ["Conditions", "WaitingSteps"]
    assert [type(p).__name__ for p in PARTS.of(wf).dispatch_held] == ["StepGates"]
    assert [type(p).__name__ for p in PARTS.of(wf).job_running] == ["JobDeadlines"]


def test_the_default_parts_do_not_hold_a_plain_step():
    state = make_state("workflows:\n  - name: w\n    steps:\n      - name: a\n")
    commands = submit(state)
    assert [c.step for c in commands if isinstance(c, Dispatch)] == ["a"]
