"""Forking (engine/forking.py): which steps a fork keeps, the input of its `from` step, the
children of a task step it keeps, refusals with why, the snapshot, and replay."""

from __future__ import annotations

import copy
import json

from tests.unit.engine.helpers import dispatches, make_state, of_type
from workflow_manager.engine import (
    Dispatch,
    ForkSeed,
    JobForked,
    JobRejected,
    JobStarted,
    JobSubmitted,
    ReusedChild,
    StepReplied,
    StepStatus,
    apply,
    replay,
)
from workflow_manager.engine.forking import payload_digest
from workflow_manager.engine.snapshot import restore, snapshot
from workflow_manager.recorder import fork_json
from workflow_manager.recovered import fork_seed

SOURCE = "11111111-1111-4111-8111-111111111111"
FORK = "22222222-2222-4222-8222-222222222222"

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: a}
      - {name: b, depends: [a]}
      - {name: c, depends: [b]}
  - name: diamond
    steps:
      - {name: a}
      - {name: side}
      - {name: b, depends: [a]}
      - {name: join, depends: [b, side]}
  - name: spread
    steps:
      - {name: prep}
      - {name: fan, task: each, depends: [prep]}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: square}
"""


def reply(job_id: str, step: str, output: dict) -> StepReplied:
    return StepReplied(job_id, step, json.dumps(output).encode(), 11.0)


def _fork(seed: ForkSeed, workflow: str = "chain", payload: dict | None = None) -> JobSubmitted:
    return JobSubmitted(FORK, workflow, payload or {"n": 0}, 10.0, fork=seed)


def test_a_fork_keeps_the_steps_before_and_sends_its_from_step_with_their_output():
    state = make_state(WORKFLOWS)
    seed = ForkSeed(SOURCE, "b", "failed", {"a": ("completed", {"n": 1})})
    _, commands = apply(state, _fork(seed))
    (forked,) = of_type(commands, JobForked)
    assert (forked.job_id, forked.source, forked.step, forked.reused) == (FORK, SOURCE, "b", 1)
    assert [(d.step, d.body) for d in dispatches(commands)] == [("b", {"n": 1})]
    job = state.jobs[FORK]
    assert job.steps["a"].status is StepStatus.COMPLETED and job.steps["a"].output == {"n": 1}
    assert job.steps_left == 2 and job.fork is not None and job.fork.reused == ("a",)


def test_an_edited_input_replaces_the_from_steps_input():
    state = make_state(WORKFLOWS)
    seed = ForkSeed(SOURCE, "b", "failed", {"a": ("completed", {"n": 1})}, input={"n": 9})
    _, commands = apply(state, _fork(seed))
    assert [d.body for d in dispatches(commands)] == [{"n": 9}]
    # The step after it gets the fork's own outputs, as usual.
    _, commands = apply(state, reply(FORK, "b", {"n": 10}))
    assert [(d.step, d.body) for d in dispatches(commands)] == [("c", {"n": 10})]


def test_a_fork_of_a_fork_from_the_same_step_keeps_the_recorded_input():
    state = make_state(WORKFLOWS)
    seed = ForkSeed(
        SOURCE, "b", "completed", {"a": ("completed", {"n": 1})}, recorded_input={"n": 7}
    )
    _, commands = apply(state, _fork(seed))
    assert [d.body for d in dispatches(commands)] == [{"n": 7}]


def test_steps_downstream_failed_or_compensated_run_again_and_side_steps_are_kept():
    state = make_state(WORKFLOWS)
    seed = ForkSeed(
        SOURCE, "b", "failed",
        {"a": ("compensated", {"n": 1}), "side": ("completed", {"s": 1}),
         "join": ("completed", {"j": 1})},
    )  # fmt: skip
    _, commands = apply(state, _fork(seed, "diamond"))
    job = state.jobs[FORK]
    assert job.fork is not None and job.fork.reused == ("side",)
    # `a` was undone by its compensation: it runs again; `b` waits for it; `join` is after b.
    assert [d.step for d in dispatches(commands)] == ["a"]
    assert job.steps["join"].status is StepStatus.PENDING


def _spread_seed(reused: tuple[ReusedChild, ...], children: str = "failed") -> ForkSeed:
    return ForkSeed(
        SOURCE, "fan", "failed", {"prep": ("completed", {"items": [1, 2, 3]})},
        children=children, reused=reused,
    )  # fmt: skip


def _kept(index: int, item: int, result: dict | None = None) -> ReusedChild:
    child = f"0000000{index}-0000-4000-8000-000000000000"
    return ReusedChild(index, child, payload_digest({"item": item}), result or {"item": item * 10})


def test_a_task_step_keeps_the_completed_children_and_starts_the_others():
    state = make_state(WORKFLOWS)
    _, commands = apply(state, _fork(_spread_seed((_kept(0, 1), _kept(2, 3))), "spread"))
    sent = dispatches(commands)
    assert [(d.step, d.body) for d in sent] == [("square", {"item": 2})]
    assert state.jobs[FORK].fork.children_reused == 2
    _, commands = apply(state, reply(sent[0].job_id, "square", {"item": 20}))
    fan = state.jobs[FORK].steps["fan"]
    assert fan.status is StepStatus.COMPLETED and fan.output == {"items": [10, 20, 30]}


def test_a_child_whose_payload_changed_or_children_all_runs_again():
    state = make_state(WORKFLOWS)
    _, commands = apply(state, _fork(_spread_seed((_kept(0, 1), _kept(1, 99))), "spread"))
    assert sorted(d.body["item"] for d in dispatches(commands)) == [2, 3]
    state = make_state(WORKFLOWS)
    seed = _spread_seed((_kept(0, 1), _kept(1, 2)), children="all")
    _, commands = apply(state, _fork(seed, "spread"))
    assert sorted(d.body["item"] for d in dispatches(commands)) == [1, 2, 3]


def test_a_fork_keeping_every_child_completes_its_task_step_at_once():
    state = make_state(WORKFLOWS)
    seed = _spread_seed((_kept(0, 1), _kept(1, 2), _kept(2, 3)))
    _, commands = apply(state, _fork(seed, "spread"))
    assert dispatches(commands) == []
    job = state.jobs[FORK]
    assert job.status == "completed" and job.result == {"items": [10, 20, 30]}


def test_a_fork_is_rejected_with_why():
    state = make_state(WORKFLOWS)
    seed = ForkSeed(SOURCE, "bb", "failed", {})
    _, commands = apply(state, _fork(seed))
    (rejected,) = of_type(commands, JobRejected)
    assert rejected.kind == "invalid-fork"
    assert "has no step 'bb'" in rejected.reason and "did you mean 'b'?" in rejected.reason
    _, commands = apply(state, _fork(ForkSeed(SOURCE, "b", "running", {})))
    (rejected,) = of_type(commands, JobRejected)
    assert "job 11111111-1111-4111-8111-111111111111 is running" in rejected.reason
    assert FORK not in state.jobs


def test_the_snapshot_keeps_what_the_fork_came_from():
    state = make_state(WORKFLOWS)
    seed = ForkSeed(SOURCE, "b", "failed", {"a": ("completed", {"n": 1})}, input={"n": 9})
    apply(state, _fork(seed))
    job = state.jobs[FORK]
    back = restore(snapshot(job), job.workflow)
    assert back.fork is not None
    assert (back.fork.source, back.fork.step, back.fork.input, back.fork.reused) == (
        SOURCE, "b", {"n": 9}, ("a",),
    )  # fmt: skip


def test_a_replayed_fork_rebuilds_the_same_state_from_its_journaled_seed():
    seed = _spread_seed((_kept(0, 1), _kept(2, 3)))
    # The seed goes through the journal's JSON, as recovery reads it.
    again = fork_seed(copy.deepcopy(fork_json(seed)))
    assert again == seed
    live, replayed = make_state(WORKFLOWS), make_state(WORKFLOWS)
    _, commands = apply(live, _fork(seed, "spread"))
    child = dispatches(commands)[0].job_id
    events = [_fork(again, "spread"), reply(child, "square", {"item": 20})]
    apply(live, events[1])
    replay(replayed, events)
    assert replayed == live
    assert of_type(commands, JobStarted)[0].job_id == FORK
    assert isinstance(dispatches(commands)[0], Dispatch)
