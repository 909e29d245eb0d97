"""Plain steps: when each is ready, what input it gets, how it is dispatched, the job's result."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from tests.unit.engine.helpers import (
    AT_REPLY,
    AT_SUBMIT,
    JOB,
    TRACE,
    cid,
    dispatched_steps,
    dispatches,
    finished,
    make_state,
    of_type,
    reply,
    run,
    submit,
)
from workflow_manager.engine import Dispatch, JobFinished, JobStatus
from workflow_manager.engine.snapshot import snapshot

DIAMOND = """
workflows:
  - name: diamond
    steps:
      - name: a
      - name: b
        depends: [a]
      - name: c
        depends: [a]
      - name: d
        depends: [{first}, {second}]
"""


def test_steps_without_depends_all_start_at_once_with_the_payload_in_declaration_order():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: zeta
      - name: alpha
      - name: later
        depends: [zeta]
      - name: mid
"""
    )
    payload = {"text": "x", "n": [1, 2]}
    commands = submit(state, "w", payload)
    assert [(d.step, d.body) for d in dispatches(commands)] == [
        ("zeta", payload),
        ("alpha", payload),
        ("mid", payload),
    ]


def test_a_dispatch_carries_queue_correlation_id_attempt_workflow_and_message_id():
    state = make_state(
        """
workflows:
  - name: pipeline
    steps:
      - name: fetch
        queue: http-fetchers
      - name: parse
"""
    )
    commands = submit(state, "pipeline", {"url": "u"})
    fetch, parse = f"{JOB}:fetch", f"{JOB}:parse"
    assert dispatches(commands) == [
        Dispatch(JOB, JOB, "fetch", "http-fetchers", fetch, {"url": "u"}, "pipeline", 1, TRACE),
        Dispatch(JOB, JOB, "parse", "parse", parse, {"url": "u"}, "pipeline", 1, TRACE),
    ]
    assert [d.message_id for d in dispatches(commands)] == [
        f"{JOB}:fetch:1",
        f"{JOB}:parse:1",
    ]


def test_a_chained_step_gets_exactly_its_parents_output_not_the_payload():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
      - name: c
        depends: [b]
"""
    )
    submit(state, "w", {"keep": "me?", "x": 1})
    commands = reply(state, cid(JOB, "a"), {"y": 2})
    assert [(d.step, d.body) for d in dispatches(commands)] == [("b", {"y": 2})]
    commands = reply(state, cid(JOB, "b"), {"x": 9, "keep": "only if returned"})
    assert [(d.step, d.body) for d in dispatches(commands)] == [
        ("c", {"x": 9, "keep": "only if returned"})
    ]
    assert state.jobs[JOB].steps["c"].input == {"x": 9, "keep": "only if returned"}


@pytest.mark.parametrize(
    ("body", "output"),
    [
        (b"", {}),
        (b" ", {}),
        (b"\n\t \r\n", {}),
        (b"{}", {}),
        (b' {"k": [1, {"n": null}]} \n', {"k": [1, {"n": None}]}),
        (b'{"unicode": "\xc3\xa9"}', {"unicode": "\u00e9"}),
    ],
)
def test_a_reply_body_becomes_the_step_output(body, output):
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
"""
    )
    submit(state, "w", {"p": 1})
    commands = reply(state, cid(JOB, "a"), body)
    assert state.jobs[JOB].steps["a"].output == output
    assert [d.body for d in dispatches(commands)] == [output]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("b", "c", {"shared": "from b", "only_b": 1, "only_c": 2}),
        ("c", "b", {"shared": "from c", "only_b": 1, "only_c": 2}),
    ],
)
def test_a_diamond_join_merges_parents_in_depends_order_first_wins(first, second, expected):
    state = make_state(DIAMOND.format(first=first, second=second))
    submit(state, "diamond", {"p": 0})
    assert dispatched_steps(reply(state, cid(JOB, "a"), {"a": 1})) == ["b", "c"]
    # d waits for both parents, whichever answers first
    assert dispatches(reply(state, cid(JOB, "c"), {"shared": "from c", "only_c": 2})) == []
    commands = reply(state, cid(JOB, "b"), {"shared": "from b", "only_b": 1})
    (dispatch,) = dispatches(commands)
    assert dispatch.step == "d"
    assert dispatch.body == expected


THREE_PARENTS = {
    "p1": {"k": "p1", "k12": "p1", "k13": "p1", "own1": 1},
    "p2": {"k": "p2", "k12": "p2", "k23": "p2", "own2": 2},
    "p3": {"k": "p3", "k13": "p3", "k23": "p3", "own3": 3},
}


def _first_wins(order: tuple[str, ...]) -> dict:
    merged: dict = {}
    for name in order:
        for key, value in THREE_PARENTS[name].items():
            if key not in merged:
                merged[key] = value
    return merged


@pytest.mark.parametrize("order", list(itertools.permutations(["p1", "p2", "p3"])))
@pytest.mark.parametrize("reply_order", [("p1", "p2", "p3"), ("p3", "p2", "p1")])
def test_three_parent_conflicts_go_to_the_first_listed_parent(order, reply_order):
    state = make_state(
        f"""
workflows:
  - name: w
    steps:
      - name: join
        depends: [{", ".join(order)}]
      - name: p1
      - name: p2
      - name: p3
"""
    )
    assert dispatched_steps(submit(state, "w")) == ["p1", "p2", "p3"]
    commands = []
    for name in reply_order:
        commands = reply(state, cid(JOB, name), THREE_PARENTS[name])
    (dispatch,) = dispatches(commands)
    assert dispatch.step == "join"
    assert dispatch.body == _first_wins(order)
    # the explicit expectation for one order, so the rule is readable here too
    if order == ("p2", "p3", "p1"):
        assert dispatch.body == {
            "k": "p2",
            "k12": "p2",
            "k23": "p2",
            "own2": 2,
            "k13": "p3",
            "own3": 3,
            "own1": 1,
        }


def test_depends_may_name_a_step_declared_later():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: report
        depends: [analyse]
      - name: analyse
        depends: [load]
      - name: load
"""
    )
    assert dispatched_steps(submit(state, "w", {"src": "s"})) == ["load"]
    assert dispatched_steps(reply(state, cid(JOB, "load"), {"rows": 3})) == ["analyse"]
    commands = reply(state, cid(JOB, "analyse"), {"mean": 1.5})
    assert [(d.step, d.body) for d in dispatches(commands)] == [("report", {"mean": 1.5})]
    commands = reply(state, cid(JOB, "report"), {"ok": True})
    assert finished(commands).result == {"ok": True}


def test_steps_ready_together_are_dispatched_in_declaration_order_not_depends_order():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: z
        depends: [root]
      - name: root
      - name: x
        depends: [root]
      - name: y
        depends: [root]
"""
    )
    submit(state, "w")
    assert dispatched_steps(reply(state, cid(JOB, "root"), {})) == ["z", "x", "y"]


def test_a_step_waits_for_every_dependency():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
      - name: c
      - name: all
        depends: [c, a, b]
"""
    )
    submit(state, "w")
    assert dispatches(reply(state, cid(JOB, "b"), {})) == []
    assert dispatches(reply(state, cid(JOB, "a"), {})) == []
    assert state.jobs[JOB].steps["all"].status == "pending"
    assert dispatched_steps(reply(state, cid(JOB, "c"), {})) == ["all"]


LAYERED = """
workflows:
  - name: w
    steps:
      - name: sink
        depends: [left, right]
      - name: left
        depends: [src]
      - name: right
        depends: [src]
      - name: src
      - name: side
"""


@pytest.mark.parametrize("fifo", [True, False])
def test_every_step_is_dispatched_exactly_once_with_attempt_one(fifo):
    state = make_state(LAYERED)
    log = list(submit(state, "w"))
    pending = dispatches(log)
    while pending:
        request = pending.pop(0 if fifo else -1)
        more = reply(state, request.correlation_id, {request.step: True})
        log += more
        pending += dispatches(more)
    counts = Counter(d.correlation_id for d in dispatches(log))
    assert counts == {cid(JOB, s): 1 for s in ["sink", "left", "right", "src", "side"]}
    assert {d.attempt for d in dispatches(log)} == {1}
    assert finished(log).status == JobStatus.COMPLETED


def test_the_result_merges_terminal_steps_in_declaration_order_first_wins():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: t2
        depends: [mid]
      - name: mid
      - name: t1
        depends: [mid]
      - name: t3
"""
    )
    outputs = {
        "mid": {"k": "mid", "from_mid": 1},
        "t2": {"k": "t2", "shared": "t2", "only2": 2},
        "t1": {"shared": "t1", "only1": 1},
        "t3": {"k": "t3", "shared": "t3", "only3": 3},
    }
    log = run(state, submit(state, "w", {"payload": 1}), lambda d: outputs[d.step])
    done = finished(log)
    wf = state.workflow("w")
    assert wf is not None
    assert (
        done.job_id,
        done.root_id,
        done.workflow,
        done.definition,
        done.flow,
        done.status,
        done.result,
        done.error,
        done.parent_id,
        done.payload,
        done.submitted_at,
        done.at,
    ) == (
        JOB,
        JOB,
        "w",
        wf.content_hash,
        "w",
        "completed",
        {"k": "t2", "shared": "t2", "only2": 2, "only1": 1, "only3": 3},
        None,
        None,
        {"payload": 1},
        AT_SUBMIT,
        AT_REPLY,
    )
    job = state.jobs[JOB]
    assert done.snapshot == snapshot(job)
    assert job.status is JobStatus.COMPLETED
    assert job.result == done.result
    assert job.error is None
    assert job.finished_at == AT_REPLY


def test_a_job_finishes_exactly_once_when_its_last_step_replies():
    state = make_state(LAYERED)
    log = run(state, submit(state, "w"), lambda d: {})
    assert len(of_type(log, JobFinished)) == 1
    assert finished(log).result == {}
    assert state.jobs[JOB].steps_left == 0
    assert all(s.status == "completed" for s in state.jobs[JOB].steps.values())


def test_step_runs_record_input_output_and_times():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
"""
    )
    submit(state, "w", {"p": 1}, at=10.0)
    reply(state, cid(JOB, "a"), {"q": 2}, at=11.0)
    a, b = state.jobs[JOB].steps["a"], state.jobs[JOB].steps["b"]
    assert (a.status, a.input, a.output, a.started_at, a.finished_at, a.attempt) == (
        "completed",
        {"p": 1},
        {"q": 2},
        10.0,
        11.0,
        1,
    )
    assert (b.status, b.input, b.output, b.started_at, b.attempt) == (
        "running",
        {"q": 2},
        None,
        11.0,
        1,
    )
