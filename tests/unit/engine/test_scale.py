"""Large fan-outs: they complete, and the engine's work grows linearly with the children.

The scaling check counts executed lines of engine code (not wall time), so it is deterministic.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import manager.engine
from manager.engine import EngineState, JobStatus
from tests.unit.engine.helpers import JOB, child_id, cid, finished, make_state, reply, submit

FAN = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
      - name: total
        depends: [fan]
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: work
"""

ENGINE_DIR = str(Path(manager.engine.__file__).resolve().parent)


def _engine_lines(action: Callable[[], Any]) -> int:
    """How many lines of manager/engine code run during `action()`."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(ENGINE_DIR) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        action()
    finally:
        sys.settrace(previous)
    return count


def _ids(n: int) -> list[str]:
    return [child_id(JOB, "fan", i) for i in range(n)]


def _fan_out_and_finish(state: EngineState, n: int) -> None:
    submit(state, "w", {"items": list(range(n)), "tag": "x"})
    for index, kid in enumerate(_ids(n)):
        reply(state, cid(kid, "work"), {"item": index * 2, "k": index})


def test_ten_thousand_children_complete():
    n = 10_000
    state = make_state(FAN)
    commands = submit(state, "w", {"items": list(range(n))})
    assert len(state.jobs) == n + 1
    assert len(commands) == 1 + 2 * n  # JobStarted for the job and each child, then n Dispatches
    kids = _ids(n)
    for index in reversed(range(n)):
        assert state.jobs[JOB].steps["fan"].status == "running"
        reply(state, cid(kids[index], "work"), {"item": -index, "k": index})
    fan = state.jobs[JOB].steps["fan"]
    assert fan.status == "completed"
    assert fan.output == {"k": 0, "items": [-i for i in range(n)]}
    assert fan.children == kids
    commands = reply(state, cid(JOB, "total"), {"sum": 1})
    assert finished(commands).result == {"sum": 1}
    assert all(job.status is JobStatus.COMPLETED for job in state.jobs.values())


def test_engine_work_grows_linearly_with_the_number_of_children():
    small, large = 1_000, 4_000
    lines_small = _engine_lines(lambda: _fan_out_and_finish(make_state(FAN), small))
    lines_large = _engine_lines(lambda: _fan_out_and_finish(make_state(FAN), large))
    ratio = lines_large / lines_small
    # linear is ~4; one O(n) scan per child completion would make it ~16
    assert ratio < 5, (lines_small, lines_large, ratio)


def test_one_child_completion_costs_the_same_whatever_the_number_of_siblings():
    costs = []
    for n in (10, 1_000, 4_000):
        state = make_state(FAN)
        submit(state, "w", {"items": list(range(n))})
        kids = _ids(n)
        middle = kids[n // 2]
        costs.append(_engine_lines(lambda s=state, k=middle: reply(s, cid(k, "work"), {"item": 1})))
    assert costs[0] == costs[1] == costs[2], costs


def test_the_line_counter_sees_engine_code_and_is_removed_afterwards():
    previous = sys.gettrace()
    lines = _engine_lines(lambda: submit(make_state(FAN), "w", {"items": [1]}))
    assert lines > 10
    assert sys.gettrace() is previous
