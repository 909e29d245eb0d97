"""A join or reduce task step's StepFinished carries its totals (`fan_in`), and its
step.completed run event shows them: counts, never a result or a reference's value."""

from __future__ import annotations

import json

from tests.unit.engine.helpers import JOB, child_id, cid, make_state, of_type, reply, submit
from workflow_manager.engine import StepFinished, StepReplied, apply
from workflow_manager.events.model import run_events

FLOWS = """
workflows:
  - name: joined
    steps:
      - name: ask
        task: per_item
        join: {first: 2, then: finish}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - name: work
  - name: summed
    steps:
      - name: fan
        task: per_item
        reduce: {step: total, batch: 2}
    tasks:
      - name: per_item
        itemListKey: items
        steps:
          - name: work
"""
DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
REF = {"$ref": f"wm://main/{JOB}/{DIGEST}", "sha256": DIGEST, "size": 100_000_000}


def _finished(commands: list, step: str) -> StepFinished:
    (done,) = [c for c in of_type(commands, StepFinished) if c.step == step]
    return done


def test_a_join_met_tells_how_many_succeeded_and_what_was_left_to_finish():
    state = make_state(FLOWS)
    submit(state, "joined", {"items": [1, 2, 3, 4, 5]})
    kids = [child_id(JOB, "ask", i) for i in range(5)]
    reply(state, cid(kids[3], "work"), {"item": REF})
    commands = reply(state, cid(kids[0], "work"), {"item": 1})
    done = _finished(commands, "ask")
    assert done.fan_in == {
        "join": {"policy": "first 2", "needed": 2, "succeeded": 2, "failed": 0, "left": 3,
                 "then": "finish"},
    }  # fmt: skip
    (event,) = [e for e in run_events(commands, 3.0) if e.step == "ask"]
    body = event.to_json()
    assert body["join"] == done.fan_in["join"] and "reduce" not in body
    assert "$ref" not in json.dumps([e.to_json() for e in run_events(commands, 3.0)])


def test_a_reduce_step_tells_its_batches_and_children_reduced():
    state = make_state(FLOWS)
    submit(state, "summed", {"items": [1, 2, 3]})
    kids = [child_id(JOB, "fan", i) for i in range(3)]
    for kid in kids:
        reply(state, cid(kid, "work"), {"v": 1})
    apply(state, StepReplied(JOB, "total", b'{"n": 2}', 3.0))
    commands = apply(state, StepReplied(JOB, "total", b'{"n": 3}', 4.0))[1]
    done = _finished(commands, "fan")
    assert done.fan_in == {"reduce": {"batches": 2, "reduced": 3}}
    assert state.jobs[JOB].steps["fan"].reduction is None  # left memory all the same
    (event,) = [
        e for e in run_events(commands, 4.0) if e.type == "step.completed" and e.step == "fan"
    ]
    assert event.to_json()["reduce"] == {"batches": 2, "reduced": 3}
    # The reducer's own completions carry none.
    assert _finished(commands, "total").fan_in is None
