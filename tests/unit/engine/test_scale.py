"""Large fan-outs: they complete, and the engine's work grows linearly with the children.

The scaling check counts executed lines of engine code (not wall time), so it is deterministic.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import workflow_manager.engine
from tests.unit.engine.helpers import (
    JOB,
    child_id,
    cid,
    effects,
    finished,
    make_state,
    reply,
    started_children,
    submit,
)
from workflow_manager.engine import EngineState, JobStatus, Subject

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

# Every child started at once, for the cost-per-completion checks below.
FAN_ALL = FAN.replace("itemListKey: items", "itemListKey: items\n        max_in_flight: 100000")
WINDOW = 1_000  # the default max_in_flight

ENGINE_DIR = str(Path(workflow_manager.engine.__file__).resolve().parent)


def _engine_lines(action: Callable[[], Any]) -> int:
    """How many lines of workflow_manager/engine code run during `action()`."""
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


def test_ten_thousand_children_complete_with_at_most_a_window_running():
    n = 10_000
    state = make_state(FAN)
    commands = submit(state, "w", {"items": list(range(n))})
    assert len(state.jobs) == WINDOW + 1
    assert commands[0] == Subject(JOB, JOB)
    # JobStarted for the job and each child, Dispatches
    assert len(effects(commands)) == 1 + 2 * WINDOW
    kids = _ids(n)
    index_of = {kid: i for i, kid in enumerate(kids)}
    running = kids[:WINDOW]
    while running:
        kid = running.pop()  # the latest started first: out of element order
        assert state.jobs[JOB].steps["fan"].status == "running"
        index = index_of[kid]
        more = reply(state, cid(kid, "work"), {"item": -index, "k": index})
        running.extend(started_children(more))
        assert len(state.jobs) <= WINDOW + 2  # the window, the job, one child leaving
    fan = state.jobs[JOB].steps["fan"]
    assert fan.status == "completed"
    assert fan.output == {"k": 0, "items": [-i for i in range(n)]}
    assert fan.children == kids
    commands = reply(state, cid(JOB, "total"), {"sum": 1})
    assert finished(commands).result == {"sum": 1}
    assert list(state.jobs) == [JOB] and state.jobs[JOB].status is JobStatus.COMPLETED


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
        state = make_state(FAN_ALL)
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
