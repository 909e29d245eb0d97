"""Failure in a child: the parent's task step and job fail, and running relatives are cancelled."""

from __future__ import annotations

import pytest

from tests.unit.engine.helpers import (
    JOB,
    assert_ignored,
    child_id,
    cid,
    dispatches,
    finished,
    make_state,
    of_type,
    reply,
    snapshot,
    submit,
)
from workflow_manager.engine import JobFinished, JobStatus, NotifyOutcome, StepStatus

FAN = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
      - name: after
        depends: [fan]
      - name: side
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: leaf
          - name: tail
            depends: [leaf]
"""


def _fanned(n: int = 4, reply_to: str | None = None):
    state = make_state(FAN)
    submit(state, "w", {"items": list(range(n))}, reply_to=reply_to)
    return state, [child_id(JOB, "fan", i) for i in range(n)]


@pytest.mark.parametrize("failing", [0, 2, 3])
@pytest.mark.parametrize("how", ["x-error", "bad-body"])
def test_a_failed_child_fails_the_task_step_and_the_job_quoting_the_childs_error(failing, how):
    state, kids = _fanned(reply_to="client-q")
    # child 1 has finished already; child 3 is one step further on
    reply(state, cid(kids[1], "leaf"), {})
    reply(state, cid(kids[1], "tail"), {"item": "one"})
    reply(state, cid(kids[3], "leaf"), {})
    step = "tail" if failing == 3 else "leaf"
    if how == "x-error":
        commands = reply(state, cid(kids[failing], step), error="out of memory")
        child_message = "out of memory"
    else:
        commands = reply(state, cid(kids[failing], step), b"[1]")
        child_message = "must be a JSON object"

    child_done = finished(commands, kids[failing])
    assert child_done.status == JobStatus.FAILED
    assert child_done.parent_id == JOB
    assert child_done.error["step"] == step
    assert child_message in child_done.error["message"]

    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.result is None
    assert done.error["step"] == "fan"
    message = done.error["message"]
    assert kids[failing] in message
    assert f"element {failing}" in message
    assert f"'{step}'" in message
    assert child_message in message

    parent = state.jobs[JOB]
    assert parent.status is JobStatus.FAILED
    assert parent.steps["fan"].status is StepStatus.FAILED
    assert parent.steps["after"].status is StepStatus.PENDING
    assert dispatches(commands) == []
    assert of_type(commands, NotifyOutcome) == [
        NotifyOutcome("client-q", JOB, JOB, "failed", {"error": done.error})
    ]

    still_running = [k for i, k in enumerate(kids) if i not in (1, failing)]
    for kid in still_running:
        assert finished(commands, kid).status == JobStatus.CANCELLED
        assert state.jobs[kid].status is JobStatus.CANCELLED
    assert kids[1] not in state.jobs  # completed: out of memory, its result kept by the parent
    assert {c.job_id for c in of_type(commands, JobFinished)} == {
        JOB,
        *still_running,
        kids[failing],
    }


def test_replies_from_cancelled_siblings_and_the_failed_child_are_ignored():
    state, kids = _fanned(3)
    reply(state, cid(kids[0], "leaf"), error="boom")
    before = snapshot(state)
    for kid in kids:
        for step in ("leaf", "tail"):
            commands = reply(state, cid(kid, step), {"late": True})
            assert_ignored(state, commands, before)
    commands = reply(state, cid(JOB, "side"), {})
    assert_ignored(state, commands, before)


def test_a_failure_elsewhere_in_the_parent_cancels_its_running_children():
    state, kids = _fanned(3)
    reply(state, cid(kids[1], "leaf"), {})
    reply(state, cid(kids[1], "tail"), {})
    commands = reply(state, cid(JOB, "side"), error="side broke")
    assert finished(commands).error == {"step": "side", "message": "side broke"}
    assert [finished(commands, k).status for k in (kids[0], kids[2])] == ["cancelled"] * 2
    assert kids[1] not in state.jobs  # completed: out of memory, its result kept by the parent
    assert [j.status for j in state.jobs.values()].count(JobStatus.RUNNING) == 0


NESTED = """
workflows:
  - name: w
    steps:
      - name: outer
        task: mid
    tasks:
      - name: mid
        itemListKey: groups
        steps:
          - name: open
          - name: inner
            task: leafs
            depends: [open]
      - name: leafs
        itemListKey: leaves
        steps:
          - name: work
"""


def _nested():
    state = make_state(NESTED)
    submit(state, "w", {"groups": ["g0", "g1"]})
    mids = [child_id(JOB, "outer", i) for i in range(2)]
    for mid in mids:
        reply(state, cid(mid, "open"), {"leaves": ["a", "b", "c"]})
    grand = {mid: [child_id(mid, "inner", i) for i in range(3)] for mid in mids}
    return state, mids, grand


def test_a_failed_grandchild_fails_every_ancestor_and_cancels_the_rest_of_the_tree():
    state, mids, grand = _nested()
    reply(state, cid(grand[mids[0]][0], "work"), {"leaf": 1})
    commands = reply(state, cid(grand[mids[0]][1], "work"), error="bad leaf")

    assert finished(commands, grand[mids[0]][1]).status == "failed"
    mid_error = finished(commands, mids[0]).error
    assert mid_error["step"] == "inner"
    assert grand[mids[0]][1] in mid_error["message"] and "bad leaf" in mid_error["message"]
    top = finished(commands).error
    assert top["step"] == "outer"
    assert mids[0] in top["message"]
    assert "element 0" in top["message"]
    assert "'inner'" in top["message"]
    assert "bad leaf" in top["message"]

    cancelled = {grand[mids[0]][2], mids[1], *grand[mids[1]]}
    assert {c.job_id for c in of_type(commands, JobFinished) if c.status == "cancelled"} == (
        cancelled
    )
    statuses = {job_id: job.status for job_id, job in state.jobs.items()}
    assert grand[mids[0]][0] not in statuses  # completed: out of memory
    assert all(statuses[j] == "cancelled" for j in cancelled)
    assert [s for s in statuses.values()].count("running") == 0

    before = snapshot(state)
    for kid in cancelled - set(mids):
        assert_ignored(state, reply(state, cid(kid, "work"), {}), before)


def test_cancelled_jobs_carry_an_error_naming_the_parent():
    state, kids = _fanned(2)
    commands = reply(state, cid(kids[0], "leaf"), error="boom")
    cancelled = finished(commands, kids[1])
    assert cancelled.result is None
    assert JOB in cancelled.error["message"]
    assert cancelled.parent_id == JOB


def test_a_task_step_with_one_failing_child_among_many_fails_once():
    state, kids = _fanned(50)
    commands = reply(state, cid(kids[17], "leaf"), error="boom")
    assert len([c for c in of_type(commands, JobFinished) if c.job_id == JOB]) == 1
    assert len(of_type(commands, JobFinished)) == 51
    assert sum(c.status == "cancelled" for c in of_type(commands, JobFinished)) == 49


def test_resubmitting_a_cancelled_child_reports_it_cancelled_at_once():
    state, kids = _fanned(2)
    reply(state, cid(kids[0], "leaf"), error="boom")
    commands = submit(state, "w", job_id=kids[1], reply_to="late-q")
    (outcome,) = of_type(commands, NotifyOutcome)
    assert outcome.status == "cancelled"
    assert outcome.job_id == kids[1]
    assert JOB in outcome.body["error"]["message"]
