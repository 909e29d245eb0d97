"""A schedule's firing: the job it starts, the overlap rule (skip, or allow), and pausing."""

from __future__ import annotations

from tests.unit.engine.helpers import make_state, of_type
from workflow_manager.engine import (
    Ignored,
    JobSubmitted,
    Refused,
    ScheduleFired,
    SchedulePaused,
    SchedulePauseSet,
    apply,
    replay,
)

SCHEDULED = """
workflows:
  - name: w
    schedules:
      - {name: skipping, every: 1}
      - {name: piling, every: 1, overlap: allow}
    steps:
      - name: work
"""
FIRST = "11111111-1111-4111-8111-111111111111"
SECOND = "22222222-2222-4222-8222-222222222222"


def _fire(state, job_id: str, schedule: str, at: float):
    event = JobSubmitted(job_id, "w", {}, at, schedule=schedule)
    return event, apply(state, event)[1]


def test_a_firing_while_the_previous_job_runs_is_skipped_unless_overlap_allows():
    state = make_state(SCHEDULED)
    _, commands = _fire(state, FIRST, "skipping", 1.0)
    assert [(f.schedule, f.job_id) for f in of_type(commands, ScheduleFired)] == [
        ("skipping", FIRST)
    ]
    _, commands = _fire(state, SECOND, "skipping", 2.0)
    (ignored,) = of_type(commands, Ignored)
    assert "has not ended (overlap: skip)" in ignored.reason
    assert SECOND not in state.jobs and not of_type(commands, ScheduleFired)
    state = make_state(SCHEDULED)
    _fire(state, FIRST, "piling", 1.0)
    _, commands = _fire(state, SECOND, "piling", 2.0)
    assert SECOND in state.jobs and of_type(commands, ScheduleFired)


def test_a_replay_of_the_firings_rebuilds_the_same_state():
    live = make_state(SCHEDULED)
    events = [_fire(live, FIRST, "skipping", 1.0)[0], _fire(live, SECOND, "skipping", 2.0)[0]]
    assert replay(make_state(SCHEDULED), events) == live


def test_a_paused_schedule_fires_no_job_until_resumed_and_a_replay_agrees():
    live = make_state(SCHEDULED)
    events = [SchedulePaused("w", "piling", True, 1.0)]
    commands = apply(live, events[0])[1]
    assert commands == [SchedulePauseSet("w", "piling", True, 1.0)]
    event, commands = _fire(live, FIRST, "piling", 2.0)
    events.append(event)
    (ignored,) = of_type(commands, Ignored)
    assert ignored.reason == "schedule w/piling is paused" and FIRST not in live.jobs
    events.append(SchedulePaused("w", "piling", False, 3.0))
    apply(live, events[-1])
    event, commands = _fire(live, SECOND, "piling", 4.0)
    events.append(event)
    assert SECOND in live.jobs and of_type(commands, ScheduleFired)
    assert replay(make_state(SCHEDULED), events) == live


def test_pausing_an_unknown_schedule_is_refused_as_not_found():
    state = make_state(SCHEDULED)
    (refused,) = apply(state, SchedulePaused("w", "nope", True, 1.0))[1]
    assert isinstance(refused, Refused) and refused.kind == "not-found"
    assert "no schedule 'nope' in workflow 'w' (known: w/piling, w/skipping)" in refused.reason
    assert not state.schedules_paused
