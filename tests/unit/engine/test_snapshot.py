"""Snapshots of finished jobs, restoring them, and dropping finished job trees from memory."""

from __future__ import annotations

import json

from tests.unit.engine.helpers import JOB, cid, finished, make_state, reply, submit
from workflow_manager.engine import JobStatus
from workflow_manager.engine.snapshot import descendants, forget, restore, root_of, snapshot

FLOW = """
workflows:
  - name: w
    steps:
      - name: split
      - {name: fan, task: t, depends: [split]}
      - {name: done, depends: [fan]}
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""


def _finished_state():
    state = make_state(FLOW)
    submit(state, "w", {"p": 1})
    reply(state, cid(JOB, "split"), {"items": [1, 2]})
    fan = state.jobs[JOB].steps["fan"]
    for child in fan.children:
        reply(state, cid(child, "work"), {"item": 10})
    reply(state, cid(JOB, "done"), {"ok": True})
    return state


def _fanned_state():
    """Two children: the first completed (and gone from memory), the second running."""
    state = make_state(FLOW)
    submit(state, "w", {"p": 1})
    reply(state, cid(JOB, "split"), {"items": [1, 2]})
    first, second = state.jobs[JOB].steps["fan"].children
    reply(state, cid(first, "work"), {"item": 10})  # the completed child leaves memory at once
    assert first not in state.jobs
    return state, first, second


def test_root_of_a_child_is_its_top_level_job():
    state, _, second = _fanned_state()
    assert root_of(state, state.jobs[second]) == JOB
    assert root_of(state, state.jobs[JOB]) == JOB


def test_snapshot_is_json_and_restores_to_an_equal_job():
    state = _finished_state()
    for job in [state.jobs[JOB], *descendants(state, state.jobs[JOB])]:
        data = json.loads(json.dumps(snapshot(job)))
        again = restore(data, job.workflow)
        assert again.status is job.status and again.result == job.result
        assert again.flow is job.flow and again.parent == job.parent
        for name, run in job.steps.items():
            copy = again.steps[name]
            assert (copy.status, copy.output, copy.children, copy.attempt) == (
                run.status, run.output, run.children, run.attempt,
            )  # fmt: skip


def test_a_completed_childs_final_snapshot_restores_to_the_child_that_left_memory():
    state = make_state(FLOW)
    submit(state, "w", {"p": 1})
    reply(state, cid(JOB, "split"), {"items": [1, 2]})
    first = state.jobs[JOB].steps["fan"].children[0]
    child = state.jobs[first]
    done = finished(reply(state, cid(first, "work"), {"item": 10}), first)
    assert first not in state.jobs
    assert done.snapshot == snapshot(child)
    again = restore(json.loads(json.dumps(done.snapshot)), child.workflow)
    assert (again.id, again.status, again.result) == (first, JobStatus.COMPLETED, {"item": 10})
    assert again.flow is child.flow and again.parent == child.parent
    assert again.steps["work"].output == {"item": 10}


def test_restored_failed_job_keeps_its_error():
    state = make_state(FLOW)
    submit(state, "w", {})
    reply(state, cid(JOB, "split"), {}, error="no book")
    job = state.jobs[JOB]
    again = restore(json.loads(json.dumps(snapshot(job))), job.workflow)
    assert again.status is JobStatus.FAILED
    assert again.error == {"step": "split", "message": "no book"}


def test_forget_drops_the_whole_tree():
    state, first, second = _fanned_state()
    assert set(state.jobs) == {JOB, second} and state.gone.as_dict() == {first: JOB}
    assert forget(state, state.jobs[JOB]) == 2
    assert state.jobs == {} and len(state.gone) == 0 and state.gone.roots() == set()


NESTED = """
workflows:
  - name: w
    steps:
      - {name: outer, task: o}
    tasks:
      - name: o
        itemListKey: groups
        itemKey: items
        steps:
          - {name: inner, task: i}
      - name: i
        itemListKey: items
        steps:
          - name: work
"""


def test_forget_also_forgets_the_ids_of_grandchildren_that_left_memory():
    state = make_state(NESTED)
    submit(state, "w", {"groups": [[1, 2], [3]]})
    answered = 0
    while kids := [j.id for j in state.jobs.values() if "work" in j.steps and j.is_running]:
        reply(state, cid(kids[0], "work"), {"item": 0})
        answered += 1
    assert answered == 3  # completed children and grandchildren have left memory at once
    assert list(state.jobs) == [JOB] and len(state.gone) == 5  # 2 children, 3 grandchildren
    forget(state, state.jobs[JOB])
    assert len(state.gone) == 0 and state.gone.roots() == set()
