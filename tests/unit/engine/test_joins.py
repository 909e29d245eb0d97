"""Join policies of a task step: `min_success` and `first` complete it before every child
ends, cancelling the rest (`then: cancel`) or leaving them to run (`then: finish`); a join
that can no longer be met fails it at once."""

from __future__ import annotations

import json

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
    started_children,
    submit,
)
from workflow_manager.engine import (
    EngineState,
    ForkSeed,
    Ignored,
    JobFinished,
    JobStatus,
    JobSubmitted,
    ReusedChild,
    StepStatus,
    apply,
)
from workflow_manager.engine.forking import payload_digest

FLOW = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        join: {join}
      - name: after
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        max_in_flight: {in_flight}
        max_failed_items: {allowed}
        steps:
          - name: leaf
"""
SIZE = 5
KIDS = [child_id(JOB, "fan", i) for i in range(SIZE)]


def _fanned(join: str, size: int = SIZE, in_flight: int = 100, allowed: int = 0) -> EngineState:
    state = make_state(FLOW.format(join=join, in_flight=in_flight, allowed=allowed))
    submit(state, "w", {"items": list(range(size)), "keep": 1}, at=1.0)
    return state


def _ok(state: EngineState, index: int, at: float = 2.0) -> list:
    return reply(state, cid(KIDS[index], "leaf"), {"item": f"r{index}", "n": index}, at=at)


def _bad(state: EngineState, index: int, at: float = 2.0) -> list:
    return reply(state, cid(KIDS[index], "leaf"), error=f"bad {index}", at=at)


def _fan(state: EngineState):
    return state.jobs[JOB].steps["fan"]


def _cancelled(commands: list) -> set[str]:
    return {c.job_id for c in of_type(commands, JobFinished) if c.status == JobStatus.CANCELLED}


# -- min_success -------------------------------------------------------------------------


def test_min_success_completes_once_enough_succeeded_and_cancels_the_rest():
    state = _fanned("{min_success: 2}")
    _ok(state, 3)
    assert _fan(state).status is StepStatus.RUNNING
    commands = _ok(state, 1)

    run = _fan(state)
    assert run.status is StepStatus.COMPLETED
    assert run.output == {
        "n": 1,
        "items": [None, "r1", None, "r3", None],
        "join": {"needed": 2, "succeeded": [1, 3], "failed": [], "unfinished": [0, 2, 4]},
    }
    assert _cancelled(commands) == {KIDS[0], KIDS[2], KIDS[4]}
    assert all(state.jobs[KIDS[i]].status is JobStatus.CANCELLED for i in (0, 2, 4))
    (after,) = dispatches(commands)
    assert (after.step, after.body) == ("after", run.output)


@pytest.mark.parametrize(("percent", "needed"), [("1%", 1), ("40%", 2), ("41%", 3), ("100%", 5)])
def test_min_success_as_a_percentage_rounds_up(percent, needed):
    state = _fanned(f"{{min_success: '{percent}'}}")
    for index in range(needed - 1):
        _ok(state, index)
        assert _fan(state).status is StepStatus.RUNNING
    _ok(state, needed - 1)
    assert _fan(state).status is StepStatus.COMPLETED
    assert _fan(state).output["join"]["needed"] == needed


def test_min_success_tolerates_failures_while_it_can_still_be_met():
    state = _fanned("{min_success: 3}")
    _bad(state, 0)
    _bad(state, 1)
    assert _fan(state).status is StepStatus.RUNNING
    for index in (2, 3):
        _ok(state, index)
    _ok(state, 4)
    output = _fan(state).output
    assert output["items"] == [None, None, "r2", "r3", "r4"]
    assert [f["index"] for f in output["failed_items"]] == [0, 1]
    assert output["failed_items"][0]["error"] == {"step": "leaf", "message": "bad 0"}
    assert output["join"] == {
        "needed": 3,
        "succeeded": [2, 3, 4],
        "failed": [0, 1],
        "unfinished": [],
    }


def test_min_success_fails_at_once_when_it_can_no_longer_be_met():
    state = _fanned("{min_success: 4}")
    _ok(state, 4)
    _bad(state, 0)
    commands = _bad(state, 2)

    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error["step"] == "fan"
    message = done.error["message"]
    assert message.startswith("task step 'fan': join min_success 4 needs 4 of 5 children")
    assert "2 failed (1 succeeded, 2 left), so at most 3 can" in message
    assert f"last failure: child job {KIDS[2]} (element 2) failed at step 'leaf': bad 2" in message
    assert _cancelled(commands) >= {KIDS[1], KIDS[3]}
    assert _fan(state).status is StepStatus.FAILED
    assert "after" not in dispatched_steps(commands)


def test_a_failed_join_can_be_retried_and_keeps_the_children_that_succeeded():
    state = _fanned("{min_success: 4}")
    _ok(state, 4)
    _bad(state, 0)
    _bad(state, 2)
    commands = retry_job(state, at=5.0)
    assert sorted(started_children(commands)) == sorted(KIDS[:4])
    for index in range(3):
        _ok(state, index, at=6.0)
    run = _fan(state)
    assert run.status is StepStatus.COMPLETED
    assert run.output["items"] == ["r0", "r1", "r2", None, "r4"]
    assert run.output["join"]["unfinished"] == [3]
    assert "failed_items" not in run.output


# -- first -------------------------------------------------------------------------------


def test_first_takes_the_first_children_to_succeed():
    state = _fanned("{first: 2}")
    _ok(state, 4)
    commands = _ok(state, 0)
    assert _fan(state).output["items"] == ["r0", None, None, None, "r4"]
    assert _fan(state).output["join"]["succeeded"] == [0, 4]
    assert _cancelled(commands) == {KIDS[1], KIDS[2], KIDS[3]}


def test_first_fails_on_a_failed_child_as_join_all_does():
    state = _fanned("{first: 2}")
    _ok(state, 1)
    commands = _bad(state, 3)
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error["message"].startswith(f"child job {KIDS[3]} (element 3) failed at step")
    assert _cancelled(commands) == {KIDS[0], KIDS[2], KIDS[4]}


def test_first_with_max_failed_items_fails_once_the_rest_cannot_make_it():
    state = _fanned("{first: 3}", size=4, allowed=2)
    _bad(state, 0)
    assert _fan(state).status is StepStatus.RUNNING
    commands = _bad(state, 1)
    message = finished(commands).error["message"]
    assert "join first 3 needs 3 of 4 children to succeed, but 2 failed" in message


# -- then: finish, late children ----------------------------------------------------------

FINISH = "{min_success: 1, then: finish}"


def test_then_finish_leaves_the_others_running_and_ignores_their_results():
    state = _fanned(FINISH)
    commands = _ok(state, 2)
    assert _cancelled(commands) == set()
    output = _fan(state).output
    assert output["join"]["unfinished"] == [0, 1, 3, 4]
    frozen = json.dumps(output)

    late = _ok(state, 0, at=3.0)  # a late success, then a late failure
    assert finished(late, KIDS[0]).status == JobStatus.COMPLETED
    (ignored,) = of_type(late, Ignored)
    assert ignored.subject == KIDS[0] and "not gathered" in ignored.reason
    assert finished(_bad(state, 1, at=3.0), KIDS[1]).status == JobStatus.FAILED
    assert json.dumps(_fan(state).output) == frozen
    assert state.jobs[JOB].status is JobStatus.RUNNING


def test_then_finish_children_are_cancelled_when_their_job_completes():
    state = _fanned(FINISH)
    (after,) = dispatches(_ok(state, 2))
    commands = reply(state, after.correlation_id, {"done": True}, at=4.0)
    assert finished(commands).status == JobStatus.COMPLETED
    assert _cancelled(commands) == {KIDS[0], KIDS[1], KIDS[3], KIDS[4]}
    # The children's ends come first: the job's snapshot is the last word on its tree.
    ends = [c.job_id for c in of_type(commands, JobFinished)]
    assert ends[-1] == JOB


def test_a_reply_to_a_cancelled_child_is_ignored():
    state = _fanned("{min_success: 1}")
    _ok(state, 0)
    late = _ok(state, 1, at=3.0)
    (ignored,) = of_type(late, Ignored)
    assert "cancelled" in ignored.reason
    assert _fan(state).output["items"] == ["r0", None, None, None, None]


@pytest.mark.parametrize("then", ["cancel", "finish"])
def test_children_not_started_yet_never_start_once_the_join_is_met(then):
    state = _fanned(f"{{min_success: 1, then: {then}}}", in_flight=2)
    commands = _ok(state, 1)
    assert started_children(commands) == []
    assert [k for k in KIDS if k in state.jobs] == [KIDS[0]]
    expected = JobStatus.CANCELLED if then == "cancel" else JobStatus.RUNNING
    assert state.jobs[KIDS[0]].status is expected
    assert _fan(state).output["join"]["unfinished"] == [0, 2, 3, 4]


# -- the list's length -------------------------------------------------------------------


@pytest.mark.parametrize("join", ["{min_success: 6}", "{first: 6}"])
def test_a_list_shorter_than_the_join_needs_fails_the_step(join):
    state = make_state(FLOW.format(join=join, in_flight=100, allowed=0))
    commands = submit(state, "w", {"items": list(range(SIZE))})
    done = finished(commands)
    assert done.error["step"] == "fan"
    assert "task step 'fan': join" in done.error["message"]
    assert (
        "needs 6 children to succeed, but the list at 'items' has 5 element(s)"
        in (done.error["message"])
    )
    assert started_children(commands) == []


def test_an_empty_list_with_a_percentage_completes_at_once_as_under_all():
    state = make_state(FLOW.format(join="{min_success: '50%'}", in_flight=100, allowed=0))
    commands = submit(state, "w", {"items": [], "keep": 1})
    assert _fan(state).output == {"items": [], "keep": 1}
    assert dispatched_steps(commands) == ["after"]


# -- join: all ----------------------------------------------------------------------------


def _all_output(join_line: str) -> str:
    text = FLOW.format(join="X", in_flight=2, allowed=1).replace("        join: X\n", join_line)
    state = make_state(text)
    submit(state, "w", {"items": list(range(SIZE)), "keep": 1}, at=1.0)
    _bad(state, 1)
    for index in (0, 2, 3, 4):
        _ok(state, index)
    return json.dumps(_fan(state).output)


def test_join_all_output_is_byte_identical_to_no_join():
    assert _all_output("        join: all\n") == _all_output("")
    assert '"join"' not in _all_output("")


# -- forks -------------------------------------------------------------------------------

SOURCE = "11111111-1111-4111-8111-111111111111"
FORK = "22222222-2222-4222-8222-222222222222"


def _fork_of(join: str, kept: list[int]) -> tuple[EngineState, list]:
    """A fork of a failed job from its join step, keeping the source's children at `kept`."""
    state = make_state(FLOW.format(join=join, in_flight=1, allowed=0))
    reused = tuple(
        ReusedChild(i, f"0000000{i}-0000-4000-8000-000000000000", payload_digest({"item": i}),
                    {"item": f"s{i}"})
        for i in kept
    )  # fmt: skip
    seed = ForkSeed(SOURCE, "fan", "failed", {}, children="failed", reused=reused)
    _, commands = apply(
        state, JobSubmitted(FORK, "w", {"items": list(range(SIZE))}, 10.0, fork=seed)
    )
    return state, commands


def test_a_fork_that_kept_enough_children_completes_its_join_at_once():
    state, commands = _fork_of("{min_success: 2}", kept=[1, 3])
    fan = state.jobs[FORK].steps["fan"]
    assert fan.status is StepStatus.COMPLETED
    assert fan.output["items"] == [None, "s1", None, "s3", None]
    assert started_children(commands) == []
    assert dispatched_steps(commands) == ["after"]


def test_a_fork_counts_its_kept_children_before_the_start_loop_reaches_them():
    # One child at a time: the kept ones at the end count as soon as the first child succeeds.
    state, commands = _fork_of("{min_success: 3}", kept=[3, 4])
    (first,) = started_children(commands)
    reply(state, cid(first, "leaf"), {"item": "new"}, at=11.0)
    fan = state.jobs[FORK].steps["fan"]
    assert fan.status is StepStatus.COMPLETED
    assert fan.output["join"]["succeeded"] == [0, 3, 4]
