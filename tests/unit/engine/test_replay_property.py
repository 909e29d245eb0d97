"""Property: random DAGs under random reply orders, checked against replay and a reference model.

Each example builds a random workflow (steps depend on random earlier-generated steps but are
declared shuffled, so depends may point forward; maybe one task step), runs one or two jobs,
answering outstanding dispatches in random order with random small JSON objects, and mixing in
duplicates, stray replies, resubmissions and (sometimes) failures. Then:

1. every step of every job is dispatched at most once, with attempt 1, and every plain step of
   a completed job exactly once;
2. for every prefix k, replaying events[:k] into a fresh state and applying events[k:] gives
   the same commands as the live run, and a final state equal to the live one;
3. when every reply was good, each job ends as the reference model below predicts.

Each run draws a fan-out limit too (`max_fanout_bytes`), small enough at times that a task
step's copies of its other keys pass it: the step fails before any child starts.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.engine.helpers import JOB, NOT_A_JOB, OTHER_JOB, dispatches, effects
from workflow_manager.config.models import Workflow
from workflow_manager.engine import (
    Command,
    Dispatch,
    EngineState,
    Event,
    Ignored,
    JobStatus,
    JobSubmitted,
    StepReplied,
    StepStatus,
    Subject,
    apply,
    replay,
)
from workflow_manager.engine.fanout import DEFAULT_MAX_FANOUT_BYTES

SINGULAR = {"items": "item", "entries": "entry", "batch": "batch"}
# Element ids an item list may carry, one pool per job so that two jobs never race for an id.
POOLS = {
    JOB: ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"],
    OTHER_JOB: ["33333333-3333-4333-8333-333333333333", "44444444-4444-4444-8444-444444444444"],
}
MAX_NOISE = 8
# Conditions a step may have, and the reference's reading of each (outputs hold small ints).
CONDITIONS = {"a": lambda data: "a" in data, "b == `1`": lambda data: data.get("b") == 1}
# Fan-out limits a run may have: the default, and two that small outputs' copies often pass.
FANOUT_LIMITS = [DEFAULT_MAX_FANOUT_BYTES, DEFAULT_MAX_FANOUT_BYTES, 8, 24]


# -- random workflows --------------------------------------------------------------------


def _dag(draw: st.DrawFn, prefix: str, size: int) -> list[dict[str, Any]]:
    """Steps named prefix0..: each depends on a random subset of earlier-generated ones."""
    names = [f"{prefix}{i}" for i in range(size)]
    steps = []
    for i, name in enumerate(names):
        depends = draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=3)) if i else []
        step: dict[str, Any] = {"name": name, "depends": depends}
        if draw(st.integers(0, 4)) == 0:
            step["queue"] = f"queue-{name}"
        if draw(st.integers(0, 3)) == 0:
            step["when"] = draw(st.sampled_from(sorted(CONDITIONS)))
        if draw(st.integers(0, 3)) == 0:
            step["fallback"] = {"name": f"{name}-fb"}  # only failures reach it
        steps.append(step)
    return draw(st.permutations(steps))


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    steps = _dag(draw, "s", draw(st.integers(1, 6)))
    spec: dict[str, Any] = {"name": "w", "steps": steps}
    if draw(st.integers(0, 3)):
        draw(st.sampled_from(steps))["task"] = "t"
        task = {
            "name": "t",
            "itemListKey": draw(st.sampled_from(sorted(SINGULAR))),
            "steps": _dag(draw, "c", draw(st.integers(1, 3))),
        }
        if draw(st.integers(0, 3)) == 0:
            task["itemKey"] = "elem"
        if draw(st.booleans()):
            task["max_in_flight"] = draw(st.integers(1, 2))  # children start as others end
        spec["tasks"] = [task]
    return Workflow.model_validate(spec)


def _list_key(wf: Workflow) -> str:
    return wf.tasks[0].item_list_key if wf.tasks else "items"


def _item_key(wf: Workflow) -> str:
    """From the spec, not the model's derived `item_key`: the table above is the reference."""
    if not wf.tasks:
        return "item"
    task = wf.model_dump(by_alias=True)["tasks"][0]
    return task["itemKey"] or SINGULAR[task["itemListKey"]]


def _element(draw: st.DrawFn, pool: list[str]) -> Any:
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return {"id": draw(st.sampled_from(pool)), "v": draw(st.integers(0, 3))}
    if kind <= 2:
        return {"v": draw(st.integers(0, 3))}
    return draw(st.integers(0, 3))


def _output(draw: st.DrawFn, wf: Workflow, pool: list[str]) -> dict[str, Any]:
    """A small JSON object, often carrying the item list or the item key, to make merges collide."""
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", _item_key(wf)]), max_size=3))
    out: dict[str, Any] = {key: draw(st.integers(0, 9)) for key in keys}
    shape = draw(st.integers(0, 7))
    if shape == 1:
        out[_list_key(wf)] = draw(st.sampled_from([0, "x", None, {}]))  # not a list
    elif shape >= 2:
        out[_list_key(wf)] = [_element(draw, pool) for _ in range(draw(st.integers(0, 3)))]
    return out


# -- driving a run -----------------------------------------------------------------------


@dataclass
class Run:
    """The live run: every event, the commands each produced, and what was answered how."""

    wf: Workflow
    state: EngineState
    limit: int
    events: list[Event] = field(default_factory=list)
    commands: list[list[Command]] = field(default_factory=list)
    outstanding: list[Dispatch] = field(default_factory=list)
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)
    all_good: bool = True
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


def _fresh(wf: Workflow, limit: int) -> EngineState:
    return EngineState.from_workflows({wf.name: wf}, max_fanout_bytes=limit)


def _answer(draw: st.DrawFn, run: Run, allow_failures: bool) -> None:
    index = draw(st.integers(0, len(run.outstanding) - 1))
    request = run.outstanding.pop(index)
    how = draw(st.integers(0, 9)) if allow_failures else 9
    attempt = draw(st.sampled_from([None, 1]))
    cid = request.correlation_id
    if how == 0:
        run.all_good = False
        run.do(_replied(cid, b"{}", run.now(), error="worker failed", attempt=attempt))
    elif how == 1:
        run.all_good = False
        body = draw(st.sampled_from([b"[]", b"null", b"\xff", b"{", b'{"a": NaN}']))
        run.do(_replied(cid, body, run.now(), attempt=attempt))
    else:
        output = _output(draw, run.wf, POOLS[_root(run.state, request.job_id)])
        run.replies[cid] = output
        run.do(_replied(cid, json.dumps(output).encode(), run.now(), attempt=attempt))


def _replied(
    cid: str, body: bytes, at: float, error: str | None = None, attempt: int | None = None
) -> StepReplied:
    """A reply to the correlation id `cid`, as the intake parses it."""
    job_id, _, step = cid.partition(":")
    return StepReplied(job_id, step, body, at, error=error, attempt=attempt)


def _root(state: EngineState, job_id: str) -> str:
    job = state.jobs[job_id]
    while job.parent is not None:
        job = state.jobs[job.parent.job_id]
    return job.id


def _noise(draw: st.DrawFn, run: Run) -> None:
    """An event that must change nothing but, maybe, a job's reply_to list."""
    kind = draw(st.sampled_from(["duplicate", "stray", "attempt", "resubmit"]))
    if kind == "resubmit":
        reply_to = draw(st.sampled_from([None, "q1", "q2"]))
        job_id = draw(st.sampled_from(sorted({e.job_id for e in run.events if _is_submit(e)})))
        commands = run.do(JobSubmitted(job_id, "w", {}, run.now(), reply_to=reply_to))
        assert commands[0] == Subject(job_id, job_id, run.state.jobs[job_id].partition)
        assert isinstance(commands[1], Ignored)
        return
    if kind == "duplicate" and run.replies:
        cid = draw(st.sampled_from(sorted(run.replies)))
    elif kind == "attempt" and run.outstanding:
        cid = draw(st.sampled_from(run.outstanding)).correlation_id
    else:
        kind = "stray"
        step = draw(st.sampled_from(["s0", "c0", "nope"]))
        cid = draw(st.sampled_from([f"{NOT_A_JOB}:s0", "garbage:s0", f"{JOB}:{step}"]))
    attempt = 2 if kind == "attempt" else None
    before = _clone_jobs(run.state)
    commands = run.do(_replied(cid, b'{"noise": 1}', run.now(), attempt=attempt))
    assert isinstance(commands[0], Subject)
    if len(effects(commands)) == 1 and isinstance(commands[1], Ignored):
        assert _clone_jobs(run.state) == before
    else:  # a stray id that happened to name a running step: it was a real (good) reply
        assert kind == "stray"
        run.outstanding = [d for d in run.outstanding if d.correlation_id != cid]
        run.replies[cid] = {"noise": 1}


def _is_submit(event: Event) -> bool:
    return isinstance(event, JobSubmitted)


def _clone_jobs(state: EngineState) -> str:
    """A cheap but thorough fingerprint of every job's mutable state, and of the gone ids."""
    return repr(
        [
            (j.id, j.status, j.result, j.error, j.reply_to, j.steps_left)
            + tuple((s.status, s.attempt, s.output, s.children_left) for s in j.steps.values())
            for j in state.jobs.values()
        ]
        + [state.gone]
    )


def _drive(draw: st.DrawFn, wf: Workflow) -> Run:
    limit = draw(st.sampled_from(FANOUT_LIMITS))
    run = Run(wf, _fresh(wf, limit), limit)
    allow_failures = draw(st.booleans())
    for job_id in [JOB, OTHER_JOB][: 1 + (draw(st.integers(0, 3)) == 0)]:
        payload = _output(draw, wf, POOLS[job_id])
        reply_to = draw(st.sampled_from([None, "q1"]))
        priority = draw(st.integers(0, 9))
        partition = draw(st.none() | st.integers(0, 7))  # where a partitioned manager placed it
        run.do(
            JobSubmitted(
                job_id,
                "w",
                payload,
                run.now(),
                reply_to=reply_to,
                priority=priority,
                partition=partition,
            )  # fmt: skip
        )
    noise = 0
    while run.outstanding:
        if noise < MAX_NOISE and draw(st.integers(0, 4)) == 0:
            noise += 1
            _noise(draw, run)
        else:
            _answer(draw, run, allow_failures)
    return run


# -- the reference model -----------------------------------------------------------------


def _first_wins(objects: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for obj in objects:
        for key, value in obj.items():
            if key not in merged:
                merged[key] = value
    return merged


class Failed(Exception):
    """The reference model's prediction that a job fails at a step."""


def _child_id(parent: str, step: str, index: int, element: Any) -> str:
    if isinstance(element, dict) and isinstance(element.get("id"), str):
        try:
            return str(uuid.UUID(element["id"]))
        except ValueError:
            pass
    return str(uuid.uuid5(uuid.UUID(parent), f"{step}/{index}"))


def _expect_task_step(
    wf: Workflow, job_id: str, step: str, data: dict, replies: dict, limit: int
) -> dict:
    task = wf.tasks[0]
    key, item = task.item_list_key, _item_key(wf)
    elements = data.get(key)
    if not isinstance(elements, list):
        raise Failed(step)
    ids = [_child_id(job_id, step, i, e) for i, e in enumerate(elements)]
    if len(set(ids)) != len(ids):
        raise Failed(step)
    base = {k: v for k, v in data.items() if k != key}
    copied = {k: v for k, v in base.items() if k != item}  # each child's copy
    if elements and copied and len(elements) * len(_compact(copied)) > limit:
        raise Failed(step)
    if not elements:
        return dict(data)
    results = [
        _expect(wf, task.model_dump(by_alias=True), child, {**base, item: e}, replies, limit)
        for child, e in zip(ids, elements, strict=True)
    ]
    gathered = _first_wins([{k: v for k, v in r.items() if k != item} for r in results])
    gathered[key] = [r.get(item) for r in results]
    return gathered


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _upstream(steps: list[dict], name: str) -> set[str]:
    """`name` and every step it depends on, directly or not."""
    by_name = {s["name"]: s for s in steps}
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(by_name[current]["depends"])
    return seen


def _expect(
    wf: Workflow, flow: dict, job_id: str, payload: dict, replies: dict, limit: int
) -> dict:
    """The result a job must end with, computed from the raw spec; raises Failed.

    A task step (and what it needs) is evaluated first: if it fails, the job fails before
    steps that do not lead to it are necessarily dispatched.
    """
    steps = flow["steps"]
    first: set[str] = set()
    for step in steps:
        if step.get("task"):
            first |= _upstream(steps, step["name"])
    outputs: dict[str, dict] = {}
    while len(outputs) < len(steps):
        ready = [s for s in steps if s["name"] not in outputs and set(s["depends"]) <= set(outputs)]
        step = next((s for s in ready if s["name"] in first), ready[0])
        data = _first_wins([outputs[d] for d in step["depends"]]) if step["depends"] else payload
        if step.get("when") and not CONDITIONS[step["when"]](data):
            outputs[step["name"]] = {}  # skipped: no request, and no children
        elif step.get("task"):
            try:
                outputs[step["name"]] = _expect_task_step(
                    wf, job_id, step["name"], data, replies, limit
                )
            except Failed:
                if not step.get("fallback"):
                    raise
                # Recovered: the fallback's reply is the step's output.
                outputs[step["name"]] = replies[f"{job_id}:{step['fallback']['name']}"]
        else:
            outputs[step["name"]] = replies[f"{job_id}:{step['name']}"]
    depended = {d for s in steps for d in s["depends"]}
    return _first_wins([outputs[s["name"]] for s in steps if s["name"] not in depended])


# -- the property ------------------------------------------------------------------------


def _check_dispatches(run: Run) -> None:
    sent = [d for commands in run.commands for d in dispatches(commands)]
    counts = Counter(d.correlation_id for d in sent)
    assert all(n == 1 for n in counts.values()), counts
    assert {d.attempt for d in sent} <= {1}
    assert {d.workflow for d in sent} <= {"w"}
    # Every request carries its top-level job's priority, children's too.
    priority = {e.job_id: e.priority for e in reversed(run.events) if isinstance(e, JobSubmitted)}
    assert all(d.priority == priority[d.root_id] for d in sent)
    for job in run.state.jobs.values():
        plain = {
            f"{job.id}:{s.name}"
            for s in job.flow.steps
            if s.task is None and job.steps[s.name].status is not StepStatus.SKIPPED
        }
        fallbacks = {f"{job.id}:{s.fallback.name}" for s in job.flow.steps if s.fallback}
        mine = {c for c in counts if c.startswith(f"{job.id}:")}
        assert mine <= plain | fallbacks
        if job.status is JobStatus.COMPLETED:
            assert mine - fallbacks == plain


def _check_replay(run: Run) -> None:
    for k in range(len(run.events) + 1):
        state = replay(_fresh(run.wf, run.limit), run.events[:k])
        rest = [apply(state, event)[1] for event in run.events[k:]]
        assert rest == run.commands[k:], k
        assert state == run.state, k


def _check_outcomes(run: Run) -> None:
    spec = run.wf.model_dump(by_alias=True)
    first: dict[str, JobSubmitted] = {}
    for submitted in run.events:
        if isinstance(submitted, JobSubmitted):
            first.setdefault(submitted.job_id, submitted)
    for submitted in first.values():
        job = run.state.jobs[submitted.job_id]
        try:
            expected = _expect(run.wf, spec, job.id, submitted.payload, run.replies, run.limit)
        except Failed as failed:
            assert job.status is JobStatus.FAILED
            assert job.error is not None and job.error["step"] == str(failed)
        else:
            assert job.status is JobStatus.COMPLETED, job.error
            assert job.result == expected


def _check_partitions(run: Run) -> None:
    """A child stays in its top-level job's partition; requests name it for their reply queue."""
    jobs = run.state.jobs
    for job in jobs.values():
        assert job.partition == jobs[_root(run.state, job.id)].partition
    for command in (c for commands in run.commands for c in commands):
        if isinstance(command, Dispatch):
            assert command.partition == jobs[command.root_id].partition


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(wf=workflows(), data=st.data())
def test_random_runs_replay_exactly_and_match_the_reference_model(wf: Workflow, data):
    run = _drive(data.draw, wf)
    _check_dispatches(run)
    _check_replay(run)
    _check_partitions(run)
    if run.all_good:
        _check_outcomes(run)
        assert all(not job.is_running for job in run.state.jobs.values())
    children = sum(job.parent is not None for job in run.state.jobs.values())
    event(f"children: {min(children, 4)}{'+' if children >= 4 else ''}")
    event(f"all replies good: {run.all_good}")
    event(f"first job: {run.state.jobs[JOB].status}")
    skipped = any(
        s.status is StepStatus.SKIPPED for j in run.state.jobs.values() for s in j.steps.values()
    )
    event(f"a step skipped by its when: {skipped}")
    recovered = any(
        s.status is StepStatus.RECOVERED for j in run.state.jobs.values() for s in j.steps.values()
    )
    event(f"a step recovered by its fallback: {recovered}")
    too_large = any(
        "--max-fanout-bytes" in (s.error or "")
        for j in run.state.jobs.values()
        for s in j.steps.values()
    )
    event(f"a fan-out refused as too large: {too_large}")
