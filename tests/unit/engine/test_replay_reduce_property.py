"""Property: task steps with `reduce`, under random child outcomes and orders, reducer failures
and late copies of reducer replies, replay exactly and reduce every gathered child once.

Each example draws a list length, a batch size, `max_in_flight`, and a join (`all`,
`min_success`, or `first` with `then: cancel` or `finish`), then answers outstanding requests
in random order: children good or failed, the reducer (a summing worker) good or failed, and
now and then a reducer reply sent again (a broker's redelivery, a late duplicate). Then:

1. for every prefix k, replaying events[:k] into a fresh state (a restart mid-reduction) and
   applying events[k:] gives the same commands as the live run, and the same final state:
   no batch is lost, none is reduced twice;
2. a reduce step that completed counted each child it reduced exactly once: the elements in
   its accumulator are distinct, their values sum to its sum, and under `all` every element
   is there; under a join, at least the successes it needs;
3. the step keeps no per-child result (`child_results` stays None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.engine.helpers import JOB, dispatches, workflow
from workflow_manager.config.models import Workflow
from workflow_manager.engine import (
    Command,
    Dispatch,
    EngineState,
    Event,
    JobSubmitted,
    StepReplied,
    StepStatus,
    apply,
    replay,
)

FLOW = """
workflows:
  - name: w
    defaults: {{retry_backoff: {{initial: 0}}}}
    steps:
      - name: fan
        task: t
        reduce: {{step: total, batch: {batch}, retries: 1, initial: {{sum: 0, seen: []}}}}
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


@st.composite
def reduces(draw: st.DrawFn) -> tuple[Workflow, int]:
    size = draw(st.integers(0, 7))
    batch = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["all", "min_success", "first"]))
    then = draw(st.sampled_from(["", ", then: finish"]))
    count = draw(st.integers(1, max(size, 1)))
    join = "" if kind == "all" else f"join: {{{kind}: {count}{then}}}"
    in_flight = draw(st.integers(1, 4))
    return workflow(FLOW.format(batch=batch, join=join, in_flight=in_flight)), size


@dataclass
class Run:
    """The live run: every event and the commands each produced."""

    wf: Workflow
    state: EngineState
    events: list[Event] = field(default_factory=list)
    commands: list[list[Command]] = field(default_factory=list)
    outstanding: list[Dispatch] = field(default_factory=list)
    answered: list[StepReplied] = field(default_factory=list)  # reducer replies sent
    clock: float = 0.0

    def do(self, event_: Event) -> list[Command]:
        _, commands = apply(self.state, event_)
        self.events.append(event_)
        self.commands.append(commands)
        self.outstanding.extend(dispatches(commands))
        return commands

    def now(self) -> float:
        self.clock += 1.0
        return self.clock


def _fresh(wf: Workflow) -> EngineState:
    return EngineState.from_workflows({wf.name: wf})


def _reduced(body: dict[str, Any]) -> dict[str, Any]:
    """What a summing reducer answers to a request."""
    acc = body["accumulator"]
    results = body["results"]
    return {
        "sum": acc["sum"] + sum(r["v"] for r in results),
        "seen": [*acc["seen"], *(r["item"] for r in results)],
    }


def _answer(draw: st.DrawFn, run: Run) -> None:
    if run.answered and draw(st.integers(0, 6)) == 0:
        copy = run.answered[draw(st.integers(0, len(run.answered) - 1))]
        run.do(StepReplied(copy.job_id, copy.step, copy.body, run.now(), attempt=copy.attempt))
        return
    request = run.outstanding.pop(draw(st.integers(0, len(run.outstanding) - 1)))
    job_id, _, step = request.correlation_id.partition(":")
    failed = draw(st.integers(0, 9)) == 0
    if step == "total":
        body = json.dumps(_reduced(request.body)).encode()
        error = "reducer crashed" if failed else None
        reply = StepReplied(job_id, step, body, run.now(), error=error, attempt=request.attempt)
        if not failed:
            run.answered.append(reply)
        run.do(reply)
        return
    if failed:
        run.do(StepReplied(job_id, step, b"{}", run.now(), error="worker failed"))
        return
    value = {"item": request.body.get("item"), "v": draw(st.integers(0, 9))}
    run.do(StepReplied(job_id, step, json.dumps(value).encode(), run.now()))


def _drive(draw: st.DrawFn, wf: Workflow, size: int) -> Run:
    run = Run(wf, _fresh(wf))
    run.do(JobSubmitted(JOB, "w", {"items": list(range(size))}, run.now()))
    while run.outstanding:
        _answer(draw, run)
    return run


def _check_replay(run: Run) -> None:
    for k in range(len(run.events) + 1):
        state = replay(_fresh(run.wf), run.events[:k])
        rest = [apply(state, event_)[1] for event_ in run.events[k:]]
        assert rest == run.commands[k:], k
        assert state == run.state, k


def _leaf_values(run: Run) -> dict[int, int]:
    """Each element's value, as its child's good reply gave it."""
    values: dict[int, int] = {}
    for event_ in run.events:
        if isinstance(event_, StepReplied) and event_.step == "leaf" and event_.error is None:
            body = json.loads(event_.body)
            values[body["item"]] = body["v"]
    return values


def _check_reduced(run: Run, size: int) -> None:
    fan = run.state.jobs[JOB].steps["fan"]
    assert fan.child_results is None
    if fan.status is not StepStatus.COMPLETED or not size:
        return
    output: dict[str, Any] = fan.output or {}
    seen = output["seen"]
    assert len(seen) == len(set(seen)), seen  # no child reduced twice
    values = _leaf_values(run)
    assert output["sum"] == sum(values[i] for i in seen)
    join = fan.spec.join
    if join is None:
        assert sorted(seen) == list(range(size))  # no child lost
    else:
        assert len(seen) >= join.needed(size)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=reduces(), data=st.data())
def test_reductions_replay_exactly_and_count_each_child_once(spec: tuple[Workflow, int], data):
    wf, size = spec
    run = _drive(data.draw, wf, size)
    _check_replay(run)
    _check_reduced(run, size)
    event(f"reduce step: {run.state.jobs[JOB].steps['fan'].status}")
    late = any(
        "earlier batch" in (getattr(c, "reason", None) or "")
        for commands in run.commands
        for c in commands
    )
    event(f"a late reducer reply ignored: {late}")
