"""A task step runs at most `max_in_flight` children at once; the next starts as one ends."""

from __future__ import annotations

from tests.unit.engine.helpers import (
    JOB,
    cancel,
    child_id,
    cid,
    dispatches,
    effects,
    finished,
    make_state,
    reply,
    retry_job,
    started_children,
    submit,
)
from workflow_manager.engine import Ignored, JobStatus

FLOW = """
workflows:
  - name: w
    steps:
      - name: split
      - {name: fan, task: t, depends: [split]}
    tasks:
      - name: t
        itemListKey: items
        max_in_flight: 2
        steps:
          - name: work
"""


def _kids(count: int) -> list[str]:
    return [child_id(JOB, "fan", i) for i in range(count)]


def _fanned(count: int, flow: str = FLOW):
    state = make_state(flow)
    submit(state, "w", {})
    commands = reply(state, cid(JOB, "split"), {"items": list(range(count))})
    return state, commands


def test_only_max_in_flight_children_start_and_each_end_starts_the_next():
    state, commands = _fanned(5)
    kids = _kids(5)
    assert started_children(commands) == kids[:2]
    assert started_children(reply(state, cid(kids[1], "work"), {"item": 10})) == [kids[2]]
    assert started_children(reply(state, cid(kids[0], "work"), {"item": 0})) == [kids[3]]
    assert started_children(reply(state, cid(kids[3], "work"), {"item": 30})) == [kids[4]]
    assert started_children(reply(state, cid(kids[2], "work"), {"item": 20})) == []
    commands = reply(state, cid(kids[4], "work"), {"item": 40})
    assert finished(commands).result == {"items": [0, 10, 20, 30, 40]}  # in element order
    assert JOB in state.jobs and not any(k in state.jobs for k in kids[:4])


def test_a_failed_child_stops_the_fan_out_and_a_retry_goes_on_from_there():
    state, _ = _fanned(4)
    kids = _kids(4)
    reply(state, cid(kids[0], "work"), {"item": 0})  # starts kids[2]
    commands = reply(state, cid(kids[1], "work"), error="boom")
    assert started_children(commands) == []  # the step failed: nothing more starts
    assert finished(commands, kids[2]).status == "cancelled"
    assert finished(commands).status == "failed"
    assert kids[3] not in state.jobs

    commands = retry_job(state)
    # The failed and the cancelled child run again; the one never started waits for room.
    assert sorted(d.job_id for d in dispatches(commands)) == sorted(kids[1:3])
    assert started_children(reply(state, cid(kids[1], "work"), {"item": 1})) == [kids[3]]
    reply(state, cid(kids[2], "work"), {"item": 2})
    commands = reply(state, cid(kids[3], "work"), {"item": 3})
    assert finished(commands).status == "completed"
    assert finished(commands).result == {"items": [0, 1, 2, 3]}


def test_cancelling_a_job_starts_no_more_children():
    state, _ = _fanned(5)
    kids = _kids(5)
    commands = cancel(state)
    assert {finished(commands, k).status for k in kids[:2]} == {"cancelled"}
    assert started_children(commands) == []
    assert not any(k in state.jobs for k in kids[2:])
    assert state.jobs[JOB].status is JobStatus.CANCELLED


def test_a_completed_child_id_cannot_start_a_new_job_while_its_parent_runs():
    state, _ = _fanned(3)
    kids = _kids(3)
    reply(state, cid(kids[0], "work"), {"item": 0})
    assert kids[0] not in state.jobs  # a completed child leaves memory at once
    (ignored,) = effects(submit(state, "w", {}, job_id=kids[0]))
    assert isinstance(ignored, Ignored)
    assert f"completed already, as a child job of job {JOB}" in ignored.reason
    assert kids[0] not in state.jobs
