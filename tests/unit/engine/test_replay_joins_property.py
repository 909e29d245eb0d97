"""Property: task steps with a join policy, under random child outcomes, orders, cancels and
retries, replay exactly and keep the join's promises.

Each example draws a list length, a join (`min_success` as a count or a percentage, or
`first`, with `then: cancel` or `finish`), the task's `max_in_flight` and `max_failed_items`,
then answers outstanding requests in random order, good or failed, now and then cancelling
or retrying the job. Then:

1. for every prefix k, replaying events[:k] into a fresh state (a restart mid-join) and
   applying events[k:] gives the same commands as the live run, and the same final state;
2. a join step that completed gathered exactly `needed` successes, in element order, null
   elsewhere, and says which element is which; with `then: cancel` none of its children runs;
3. a job that is not running has no running child.
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
    CancelRequested,
    Command,
    Dispatch,
    EngineState,
    Event,
    Ignored,
    JobStatus,
    JobSubmitted,
    RetryRequested,
    StepReplied,
    StepStatus,
    apply,
    replay,
)

FLOW = """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
        join: {join}
      - name: after
        depends: [fan]
      - name: aside
    tasks:
      - name: t
        itemListKey: items
        max_in_flight: {in_flight}
        max_failed_items: {allowed}
        steps:
          - name: leaf
          - name: leaf2
            depends: [leaf]
"""


@st.composite
def joins(draw: st.DrawFn) -> tuple[Workflow, int]:
    size = draw(st.integers(0, 5))
    kind = draw(st.sampled_from(["count", "percent", "first"]))
    then = draw(st.sampled_from(["", ", then: cancel", ", then: finish"]))
    allowed = 0
    # Now and then one more than the list has: the step fails before any child starts.
    count = draw(
        st.integers(1, size + 1) if draw(st.integers(0, 5)) == 0 else st.integers(1, max(size, 1))
    )
    if kind == "count":
        join = f"{{min_success: {count}{then}}}"
    elif kind == "percent":
        join = f"{{min_success: '{draw(st.integers(1, 100))}%'{then}}}"
    else:
        join = f"{{first: {count}{then}}}"
        allowed = draw(st.integers(0, 2))
    in_flight = draw(st.integers(1, 6))
    return workflow(FLOW.format(join=join, in_flight=in_flight, allowed=allowed)), size


@dataclass
class Run:
    """The live run: every event and the commands each produced."""

    wf: Workflow
    state: EngineState
    events: list[Event] = field(default_factory=list)
    commands: list[list[Command]] = field(default_factory=list)
    outstanding: list[Dispatch] = field(default_factory=list)
    clock: float = 0.0

    def do(self, event: Event) -> list[Command]:
        _, commands = apply(self.state, event)
        self.events.append(event)
        self.commands.append(commands)
        self.outstanding.extend(dispatches(commands))
        return commands

    def now(self) -> float:
        self.clock += 1.0
        return self.clock


def _fresh(wf: Workflow) -> EngineState:
    return EngineState.from_workflows({wf.name: wf})


def _answer(draw: st.DrawFn, run: Run) -> None:
    request = run.outstanding.pop(draw(st.integers(0, len(run.outstanding) - 1)))
    job_id, _, step = request.correlation_id.partition(":")
    if draw(st.integers(0, 4)) == 3:
        event_ = StepReplied(job_id, step, b"{}", run.now(), error="worker failed")
    else:
        body = {"item": f"{job_id[:4]}-{step}", "x": draw(st.integers(0, 3))}
        event_ = StepReplied(job_id, step, json.dumps(body).encode(), run.now())
    run.do(event_)


def _drive(draw: st.DrawFn, wf: Workflow, size: int) -> Run:
    run = Run(wf, _fresh(wf))
    run.do(JobSubmitted(JOB, "w", {"items": list(range(size)), "k": 1}, run.now()))
    controls = 0
    while run.outstanding or (controls < 2 and run.state.jobs[JOB].status is JobStatus.FAILED):
        job = run.state.jobs[JOB]
        if controls < 2 and draw(st.integers(0, 24)) == 13:  # not 0: hypothesis favours it
            controls += 1
            kind = RetryRequested if job.status is JobStatus.FAILED else CancelRequested
            run.do(kind(JOB, run.now()))
            continue
        if not run.outstanding:
            break
        _answer(draw, run)
    return run


def _check_replay(run: Run) -> None:
    for k in range(len(run.events) + 1):
        state = replay(_fresh(run.wf), run.events[:k])
        rest = [apply(state, event_)[1] for event_ in run.events[k:]]
        assert rest == run.commands[k:], k
        assert state == run.state, k


def _check_join(run: Run, size: int) -> None:
    job = run.state.jobs[JOB]
    fan = job.steps["fan"]
    join = fan.spec.join
    assert join is not None
    kids = fan.children or []
    if fan.status is StepStatus.COMPLETED and size:
        output: dict[str, Any] = fan.output or {}
        which = output["join"]
        needed = join.needed(size)
        assert which["needed"] == needed
        assert len(which["succeeded"]) == needed
        every = sorted(which["succeeded"] + which["failed"] + which["unfinished"])
        assert every == list(range(size))
        assert [i for i, v in enumerate(output["items"]) if v is not None] == which["succeeded"]
        assert [f["index"] for f in output.get("failed_items", [])] == which["failed"]
        if join.then == "cancel":
            assert not any(run.state.jobs[k].is_running for k in kids if k in run.state.jobs)
    if not job.is_running:
        assert not any(c.is_running for c in run.state.jobs.values() if c.parent is not None)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=joins(), data=st.data())
def test_joins_replay_exactly_and_keep_their_promises(spec: tuple[Workflow, int], data):
    wf, size = spec
    run = _drive(data.draw, wf, size)
    _check_replay(run)
    _check_join(run, size)
    fan = run.state.jobs[JOB].steps["fan"]
    event(f"join step: {fan.status}")
    event(f"job: {run.state.jobs[JOB].status}")
    late = any(
        isinstance(c, Ignored) and "not gathered" in c.reason
        for commands in run.commands
        for c in commands
    )
    event(f"a late child ignored: {late}")
