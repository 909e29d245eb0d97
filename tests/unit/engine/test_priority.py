"""Priorities: a job keeps its priority, its children inherit it, every request carries it."""

from __future__ import annotations

from tests.unit.engine.helpers import JOB, cid, dispatches, make_state, reply
from workflow_manager.engine import JobSubmitted, apply
from workflow_manager.engine.snapshot import restore, snapshot

FLOW = """
workflows:
  - name: w
    steps:
      - name: split
      - name: fan
        task: per-item
        depends: [split]
    tasks:
      - name: per-item
        itemListKey: items
        steps:
          - name: work
"""


def test_children_inherit_the_priority_and_every_request_carries_it():
    state = make_state(FLOW)
    _, commands = apply(state, JobSubmitted(JOB, "w", {}, 1.0, priority=6))
    assert [d.priority for d in dispatches(commands)] == [6]
    commands = reply(state, cid(JOB, "split"), {"items": [1, 2]})
    children = [state.jobs[d.job_id] for d in dispatches(commands)]
    assert len(children) == 2
    assert {child.priority for child in children} == {6}
    assert {d.priority for d in dispatches(commands)} == {6}


def test_the_default_priority_is_0_and_a_snapshot_keeps_the_priority():
    state = make_state(FLOW)
    _, commands = apply(state, JobSubmitted(JOB, "w", {}, 1.0))
    assert [d.priority for d in dispatches(commands)] == [0]
    job = state.jobs[JOB]
    job.priority = 3
    assert restore(snapshot(job), job.workflow).priority == 3
