"""`reduce` on a task step: finished children's results go to a reducer step in batches, in
completion order, one reduction at a time; its replies are the accumulator, which becomes the
step's output; no per-child result is kept."""

from __future__ import annotations

import json

from tests.unit.engine.helpers import (
    JOB,
    child_id,
    cid,
    dispatches,
    finished,
    fire,
    make_state,
    of_type,
    reply,
    retry_job,
    submit,
)
from workflow_manager.engine import (
    EngineState,
    Ignored,
    JobStatus,
    Refused,
    StepReplied,
    StepStatus,
    apply,
)

FLOW = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        reduce: {{step: total, batch: {batch}, initial: {{sum: 0, count: 0}}{extra}}}
        {join}
      - name: after
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        max_in_flight: {in_flight}
        steps:
          - name: leaf
"""
SIZE = 5
KIDS = [child_id(JOB, "fan", i) for i in range(SIZE)]


def _fanned(
    batch: int = 2, join: str = "", in_flight: int = 100, extra: str = "", size: int = SIZE
) -> EngineState:
    text = FLOW.format(batch=batch, join=join, in_flight=in_flight, extra=extra)
    state = make_state(text)
    submit(state, "w", {"items": list(range(size))}, at=1.0)
    return state


def _ok(state: EngineState, index: int, at: float = 2.0) -> list:
    return reply(state, cid(KIDS[index], "leaf"), {"item": index, "v": index * 10}, at=at)


def _bad(state: EngineState, index: int) -> list:
    return reply(state, cid(KIDS[index], "leaf"), error=f"bad {index}", at=2.0)


def _reduced(commands: list) -> list[dict]:
    """The bodies of the reducer requests among `commands`."""
    return [d.body for d in dispatches(commands) if d.step == "total"]


def _sum(state: EngineState, body: dict, at: float = 3.0, attempt: int | None = None) -> list:
    """Answer a reducer request as a summing reducer would."""
    acc = body["accumulator"]
    new = {
        "sum": acc["sum"] + sum(r["v"] for r in body["results"]),
        "count": acc["count"] + len(body["results"]),
        "seen": [*acc.get("seen", []), *(r["item"] for r in body["results"])],
    }
    event = StepReplied(JOB, "total", json.dumps(new).encode(), at, attempt=attempt)
    return apply(state, event)[1]


def _fan(state: EngineState):
    return state.jobs[JOB].steps["fan"]


def test_a_full_batch_goes_to_the_reducer_in_completion_order():
    state = _fanned(batch=2)
    assert not _reduced(_ok(state, 3))
    (body,) = _reduced(_ok(state, 1))
    assert body == {
        "accumulator": {"sum": 0, "count": 0},
        "results": [{"item": 3, "v": 30}, {"item": 1, "v": 10}],
    }
    fan = _fan(state)
    assert fan.child_results is None  # nothing kept per child
    assert fan.reduction is not None and fan.reduction.pending == []
    assert fan.reduction.sending == 2


def test_one_reduction_at_a_time_and_the_last_partial_batch_completes_the_step():
    state = _fanned(batch=2)
    _ok(state, 0)
    (first,) = _reduced(_ok(state, 4))
    # While the first reduction is in flight, more results wait.
    assert not _reduced(_ok(state, 2))
    assert not _reduced(_ok(state, 1))
    (second,) = _reduced(_sum(state, first))
    assert second["accumulator"] == {"sum": 40, "count": 2, "seen": [0, 4]}
    assert second["results"] == [{"item": 2, "v": 20}, {"item": 1, "v": 10}]
    assert not _reduced(_sum(state, second))  # one left: not a full batch yet
    (last,) = _reduced(_ok(state, 3))  # every child in: the last, shorter batch
    assert last["results"] == [{"item": 3, "v": 30}]
    commands = _sum(state, last)
    fan = _fan(state)
    assert fan.status is StepStatus.COMPLETED
    assert fan.output == {"sum": 100, "count": 5, "seen": [0, 4, 2, 1, 3]}
    (after,) = dispatches(commands)
    assert (after.step, after.body) == ("after", fan.output)
    assert state.jobs[JOB].steps["total"].input is None  # the batch left memory


def test_an_empty_list_completes_with_the_initial_accumulator():
    state = _fanned(size=0)
    assert _fan(state).status is StepStatus.COMPLETED
    assert _fan(state).output == {"sum": 0, "count": 0}


def test_a_late_reply_of_an_earlier_batch_is_ignored():
    state = _fanned(batch=1)
    (first,) = _reduced(_ok(state, 0))
    _ok(state, 1)
    (second,) = _reduced(_sum(state, first, attempt=1))
    commands = _sum(state, first, attempt=1)  # batch 1's reply again, while batch 2 runs
    (ignored,) = of_type(commands, Ignored)
    assert "earlier batch" in ignored.reason
    assert _fan(state).reduction.accumulator["count"] == 1  # type: ignore[union-attr]
    _sum(state, second, attempt=2)
    assert _fan(state).reduction.accumulator["count"] == 2  # type: ignore[union-attr]


def test_a_failed_reduction_is_retried_with_the_same_batch():
    state = _fanned(batch=2, extra=", retries: 1")
    _ok(state, 0)
    (body,) = _reduced(_ok(state, 1))
    apply(state, StepReplied(JOB, "total", b"{}", 3.0, error="boom", attempt=1))
    (again,) = _reduced(fire(state, f"retry:{JOB}:total:2", 5.0))  # after the backoff
    assert again == body
    _sum(state, again, attempt=2)
    assert _fan(state).reduction.reduced == 2  # type: ignore[union-attr]


def test_each_batch_gets_the_whole_retry_budget():
    state = _fanned(batch=1, extra=", retries: 1")
    (body,) = _reduced(_ok(state, 0))
    apply(state, StepReplied(JOB, "total", b"{}", 3.0, error="boom", attempt=1))
    fire(state, f"retry:{JOB}:total:2", 5.0)
    _sum(state, body, attempt=2)
    (body,) = _reduced(_ok(state, 1))
    apply(state, StepReplied(JOB, "total", b"", 4.0, error="x", attempt=3))
    (again,) = _reduced(fire(state, f"retry:{JOB}:total:4", 9.0))
    assert again == body  # the second batch retried too, though the first used a retry


def test_a_reducer_that_fails_for_good_fails_the_step_and_cancels_the_children():
    state = _fanned(batch=2)
    _ok(state, 0)
    _ok(state, 1)
    commands = apply(state, StepReplied(JOB, "total", b"", 3.0, error="boom", attempt=1))[1]
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    message = state.jobs[JOB].error["message"]  # type: ignore[index]
    assert "reducer 'total' failed on a batch of 2 result(s), after 0 reduced" in message
    assert "boom" in message
    assert all(state.jobs[KIDS[i]].status is JobStatus.CANCELLED for i in (2, 3, 4))
    assert state.jobs[JOB].steps["total"].status is StepStatus.FAILED


def test_a_reducer_timeout_fails_the_attempt():
    state = _fanned(batch=1, extra=", timeout: 5")
    _ok(state, 0)
    commands = fire(state, f"timeout:{JOB}:total:1", 10.0)
    message = state.jobs[JOB].error["message"]  # type: ignore[index]
    assert finished(commands).status == JobStatus.FAILED
    assert "no reply within 5s" in message


def test_min_success_reduces_what_was_gathered_and_cancels_the_rest():
    state = _fanned(batch=2, join="join: {min_success: 3}")
    _bad(state, 0)
    _ok(state, 2)
    (first,) = _reduced(_ok(state, 4))
    commands = _ok(state, 3)  # the join is met: the rest is cancelled, the last batch waits
    assert {state.jobs[KIDS[1]].status} == {JobStatus.CANCELLED}
    assert not _reduced(commands)
    assert _fan(state).status is StepStatus.RUNNING
    (last,) = _reduced(_sum(state, first))
    assert last["results"] == [{"item": 3, "v": 30}]
    _sum(state, last)
    fan = _fan(state)
    assert fan.status is StepStatus.COMPLETED
    assert {k: fan.output[k] for k in ("sum", "count")} == {"sum": 90, "count": 3}  # type: ignore[index]
    assert [f["index"] for f in fan.output["failed_items"]] == [0]  # type: ignore[index]


def test_then_finish_children_ending_after_the_join_are_not_reduced():
    state = _fanned(batch=5, join="join: {min_success: 2, then: finish}")
    _ok(state, 0)
    (body,) = _reduced(_ok(state, 1))  # the join is met: the last batch goes
    commands = _ok(state, 2)  # a child left to finish: not reduced
    assert any("not reduced" in i.reason for i in of_type(commands, Ignored))
    assert not _reduced(commands)
    _sum(state, body)
    assert _fan(state).output["count"] == 2  # type: ignore[index]


def test_children_start_as_others_finish_while_reducing():
    state = _fanned(batch=1, in_flight=2)
    assert sum(1 for k in KIDS if k in state.jobs) == 2
    (body,) = _reduced(_ok(state, 0))
    assert KIDS[2] in state.jobs  # the next child started
    _sum(state, body)


def test_a_job_whose_reduce_step_failed_may_not_be_retried():
    state = _fanned(batch=2)
    _ok(state, 0)
    _ok(state, 1)
    apply(state, StepReplied(JOB, "total", b"", 3.0, error="boom", attempt=1))
    (refusal,) = of_type(retry_job(state), Refused)
    assert "reduces its children" in refusal.reason


def test_no_more_children_start_while_two_batches_wait():
    state = _fanned(batch=1, in_flight=2)
    (first,) = _reduced(_ok(state, 0))  # in flight from now on; child 2 starts
    _ok(state, 1)  # one waits: child 3 starts
    _ok(state, 2)  # two wait (two batches of 1): child 4 is held back
    assert KIDS[3] in state.jobs and KIDS[4] not in state.jobs
    (second,) = _reduced(_sum(state, first))  # one batch goes: room for child 4
    assert second["results"] == [{"item": 1, "v": 10}]
    assert KIDS[4] in state.jobs
