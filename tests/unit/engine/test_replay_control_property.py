"""Property: retries, timers, cancel and retry requests replay exactly.

Each example builds a random workflow with random failure policies (retries, backoff,
timeouts, a job deadline, maybe a task step with max_failed_items, maybe on_error and
on_cancel branches, maybe `compensate` on main and task steps, steps with a `when` or a
fallback, schemas on payloads, inputs and outputs, job metadata), then applies a random mix of
good, failed and late replies (some patching the metadata), TimerFired for pending timers,
and cancel and retry requests. Then:

1. for every prefix k, replaying events[:k] into a fresh state and applying events[k:] gives
   the same commands as the live run, and a final state equal to the live one;
2. after every event, `state.timers` is exactly the timers started and not yet cancelled or
   delivered;
3. every job's JobStarted and JobFinished alternate, and an outcome notice goes out only
   with a JobFinished;
4. each new dispatch of a workflow or task step has the attempt after the previous one;
5. under concurrency limits (a workflow's per-key limit, nested `limits:`, max_running_jobs,
   a step's `concurrency`), with random priorities, no job or step limit is ever exceeded,
   and a job queues before it starts;
6. under a workflow's `rate` (maybe per `p`, with those limits too), no window of `per`
   seconds holds more first starts of top-level jobs than its limit.

Some submissions carry a `not_before`: those jobs are scheduled and started by their timer
(or cancelled before they start). Some steps wait for a signal (`wait: true`): signals come
for them (early, on time, late, twice, for unknown steps), and their timeouts fire. Some
workflows are unique by the payload's `p`: later submissions collide with unfinished jobs or
start once those have settled. Some take turns by `p` (fairness, weighted by `p`) wherever
work waits for a limit. Some workflows debounce triggers by `p` (leading or trailing):
later submissions within the period join the first job's window. Some submissions are a
schedule's firings, with the schedule paused or resumed (or an unknown one refused) in between.
Some are forks of the first jobs from a random step (some with an edited input; a fork of a job
not ended, or from an unknown step, is rejected).
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.engine.helpers import JOB, NOT_A_JOB, OTHER_JOB, dispatches
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.config.models import Workflow
from workflow_manager.engine import (
    CancelRequested,
    CancelTimer,
    Command,
    Dispatch,
    EngineState,
    Event,
    ForkSeed,
    JobDebounced,
    JobDuplicate,
    JobFinished,
    JobForked,
    JobQueued,
    JobRejected,
    JobScheduled,
    JobStarted,
    JobSubmitted,
    JobThrottled,
    NotifyOutcome,
    PauseRequested,
    Refused,
    RetryRequested,
    SchedulePaused,
    SchedulePauseSet,
    SignalReceived,
    StartTimer,
    StepFinished,
    StepReplied,
    StepSignalled,
    Subject,
    TimerFired,
    apply,
    replay,
)

MAX_EVENTS = 30
# Good replies carry v in 0..3 and maybe a short list: some match, some do not.
SCHEMA = {"properties": {"v": {"maximum": 2}, "items": {"maxItems": 1}}}
SCHEMA_KEYS = ["input_schema", "output_schema"]
ACTIONS = ["answer"] * 5 + ["late"] + ["timer"] * 3 + ["cancel"] + ["retry"] * 3 + ["signal"] * 2
ACTIONS += ["submit"]  # a later job, maybe with the key of an unfinished one (unique)
ACTIONS += ["pause", "resume"]  # a job paused (its requests and timers held) or resumed
ACTIONS += ["fork"]  # a fork of one of the first jobs from a random step
LATER_JOBS = ["1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a"]
FORKS = ["3e4f5a6b-7c8d-4e9f-8a1b-2c3d4e5f6a7b", "4f5a6b7c-8d9e-4f0a-9b1c-3d4e5f6a7b8c"]
# Mostly main steps (those that may wait), a task's, a branch's, and an unknown one.
SIGNALLED = ["s0", "s0", "s1", "s1", "s2", "s3", "c0", "e0", "zz"]


# -- random workflows --------------------------------------------------------------------


def _policy(draw: st.DrawFn) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    if draw(st.booleans()):
        policy["retries"] = draw(st.integers(0, 2))
    if draw(st.integers(0, 2)) == 0:
        policy["timeout"] = draw(st.sampled_from([3.0, 5.0]))
    if draw(st.integers(0, 2)) == 0:
        policy["retry_backoff"] = {
            "initial": draw(st.sampled_from([1.0, 2.0])),
            "multiplier": draw(st.sampled_from([1.0, 2.0])),
            "max": 4.0,
        }
    return policy


def _steps(
    draw: st.DrawFn, prefix: str, size: int, compensated: bool = False
) -> list[dict[str, Any]]:
    names = [f"{prefix}{i}" for i in range(size)]
    steps = []
    for i, name in enumerate(names):
        depends = draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=2)) if i else []
        step = {"name": name, "depends": depends, **_policy(draw)}
        if compensated and draw(st.integers(0, 2)) > 0:
            step["compensate"] = {"name": f"u{name}", **_policy(draw)}
        if draw(st.integers(0, 4)) == 0:
            step["when"] = draw(st.sampled_from(["a", "b == `1`", "length(@) > `1`"]))
        if prefix in ("s", "c") and draw(st.integers(0, 2)) == 0:
            step["fallback"] = {"name": f"{name}-fb", **_policy(draw)}  # not on branch steps
        if draw(st.integers(0, 3)) == 0:
            step[draw(st.sampled_from(SCHEMA_KEYS))] = SCHEMA
        if draw(st.integers(0, 3)) == 0:
            step["concurrency"] = 1  # all jobs together: the two jobs take turns
        if draw(st.integers(0, 2)) == 0:
            # A waiting step: no request, no retries, fallback, schemas or concurrency; only
            # its own timeout ends the wait.
            for key in (
                "retries", "retry_backoff", "compensate", "fallback", "concurrency", *SCHEMA_KEYS
            ):  # fmt: skip
                step.pop(key, None)
            step["wait"] = True
        steps.append(step)
    return steps


def _task_step(step: dict[str, Any]) -> None:
    step.update(task="t", wait=False)
    step.pop("concurrency", None)  # a task step sends no requests to bound


@st.composite
def workflows(draw: st.DrawFn, always_compensated: bool = False) -> Workflow:
    compensated = always_compensated or draw(st.integers(0, 3)) > 0
    steps = _steps(draw, "s", draw(st.integers(1, 4)), compensated)
    defaults = {"retries": draw(st.integers(0, 2)), **_policy(draw)}
    spec: dict[str, Any] = {"name": "w", "steps": steps, "defaults": defaults}
    if draw(st.booleans()):
        spec["timeout"] = draw(st.sampled_from([6.0, 20.0]))
    if draw(st.booleans()):
        spec["unique"] = {"key": "p"}  # payloads carry p 1 or 2: some keys collide
    has_task = draw(st.booleans())
    # Submissions may be a schedule's firings: the overlap rule may skip the second.
    overlap = draw(st.sampled_from(["skip", "allow"]))
    spec["schedules"] = [{"name": "s", "every": 1, "overlap": overlap}]
    _limits(draw, spec)
    if has_task:
        _task_step(draw(st.sampled_from(steps)))
        spec["tasks"] = [
            {
                "name": "t",
                "itemListKey": "items",
                "max_failed_items": draw(st.integers(0, 1)),
                "defaults": _policy(draw),
                "steps": _steps(draw, "c", draw(st.integers(1, 2)), compensated),
            }
        ]
        if draw(st.integers(0, 2)) == 0:
            spec["tasks"][0]["payload_schema"] = {"properties": {"item": {"maximum": 0}}}
    if draw(st.integers(0, 3)) == 0:
        spec["payload_schema"] = {"properties": {"items": {"maxItems": 1}}}
    for kind, prefix in (("on_error", "e"), ("on_cancel", "x")):
        if draw(st.booleans()):
            branch = _steps(draw, prefix, draw(st.integers(1, 2)))
            if has_task and draw(st.integers(0, 3)) == 0:
                _task_step(branch[-1])
            spec[kind] = branch
    if draw(st.integers(0, 3)) == 0:
        # Triggers of one `p` within the period make one job (the later ones are debounced).
        period = draw(st.sampled_from([3.0, 10.0]))
        spec["debounce"] = {"key": "p", "period": period, "mode": _mode(draw)}
    return Workflow.model_validate(spec)


def _limits(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    """Maybe a concurrency limit of one job (per `p`, or for all), maybe fairness by `p`."""
    if draw(st.integers(0, 2)) == 0:
        limit: dict[str, Any] = {"limit": 1}
        if draw(st.booleans()):
            limit["key"] = "p"
        spec["concurrency"] = limit
    if draw(st.integers(0, 2)) == 0:
        # At most one job started in any 3 s (per `p`, or for all): the others wait their turn.
        rate: dict[str, Any] = {"limit": 1, "per": 3.0}
        if draw(st.booleans()):
            rate["key"] = "p"
        spec["rate"] = rate
    if draw(st.integers(0, 2)) == 0:
        # Work waiting for a limit goes round-robin across the values of `p`, weighted by it.
        spec["fairness"] = {"key": "p", "weight": "p"}


def _mode(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["leading", "trailing"]))


# -- driving a run -----------------------------------------------------------------------


@dataclass
class Run:
    """The live run: events, the commands of each, and the bookkeeping the checks need."""

    wf: Workflow
    state: EngineState
    events: list[Event] = field(default_factory=list)
    commands: list[list[Command]] = field(default_factory=list)
    sent: list[Dispatch] = field(default_factory=list)
    ledger: dict[str, float] = field(default_factory=dict)
    clock: float = 0.0
    max_running_jobs: int | None = None
    limits: tuple[JobLimit, ...] = ()  # nested limits (`limits:` of the file)
    good_replies: int = 2  # how many good replies to 2 errors and 1 bad body, by weight

    def do(self, event: Event) -> list[Command]:
        _, commands = apply(self.state, event)
        self.events.append(event)
        self.commands.append(commands)
        self.sent.extend(dispatches(commands))
        if isinstance(event, TimerFired):
            self.ledger.pop(event.key, None)  # delivered (or stale: then not pending anyway)
        for command in commands:
            if isinstance(command, StartTimer):
                self.ledger[command.key] = command.due_at
            elif isinstance(command, CancelTimer):
                del self.ledger[command.key]
        assert self.state.timers == self.ledger
        assert all(gate.free >= 0 for gate in self.state.gates.values())
        assert all(slots.free >= 0 for slots in self.state.scopes.values())
        return commands

    def tick(self, to: float = 0.0) -> float:
        self.clock = max(self.clock + 1.0, to)
        return self.clock


def _fresh(
    wf: Workflow, max_running_jobs: int | None = None, limits: tuple[JobLimit, ...] = ()
) -> EngineState:
    return EngineState.from_workflows(
        {wf.name: wf}, max_running_jobs=max_running_jobs, limits=limits
    )


# Nested limits: none, one of a job per `p`, or that and one of two jobs for all.
PER_P = JobLimit(name="per-p", limit=1, key="p")
LIMIT_DRAWS: list[tuple[JobLimit, ...]] = [
    (), (), (PER_P,), (JobLimit(name="all-w", limit=2, workflows=("w",)), PER_P)
]  # fmt: skip


def _reply(draw: st.DrawFn, run: Run, request: Dispatch) -> None:
    how = draw(st.sampled_from(["good"] * run.good_replies + ["error"] * 2 + ["bad-body"]))
    attempt = draw(st.sampled_from([None, request.attempt, request.attempt - 1, 99]))
    body: bytes = b"{}"
    error = None
    patch = None
    if how == "good":
        # Metadata patches: objects deep-merged into the job's, or no object (a failed attempt).
        patch = draw(st.sampled_from([None, None, '{"k": 1}', '{"t": {"x": 2}}', "[1]"]))
        output: dict[str, Any] = {"v": draw(st.integers(0, 3))}
        if draw(st.booleans()):
            output["items"] = list(range(draw(st.integers(0, 2))))
        body = json.dumps(output).encode()
    elif how == "error":
        error = "worker failed"
    else:
        body = draw(st.sampled_from([b"[]", b"null", b"{"]))
    run.do(
        StepReplied(
            request.job_id,
            request.step,
            body,
            run.tick(),
            error=error,
            attempt=attempt,
            meta_patch=patch,
        )  # fmt: skip
    )


def _job_ids(run: Run) -> list[str]:
    """Mostly the top-level jobs; sometimes a child's id or an unknown one."""
    children = sorted(j for j in run.state.jobs if j not in (JOB, OTHER_JOB))
    return [JOB] * 3 + [OTHER_JOB] * 2 + [NOT_A_JOB] + children[:2]


def _step(draw: st.DrawFn, run: Run) -> str:
    kind = draw(st.sampled_from(ACTIONS))
    if kind == "answer" and run.sent:
        _reply(draw, run, draw(st.sampled_from(run.sent[-6:])))
    elif kind == "late" and run.sent:
        _reply(draw, run, draw(st.sampled_from(run.sent)))
    elif kind == "timer" and run.state.timers:
        key = draw(st.sampled_from(sorted(run.state.timers)))
        run.do(TimerFired(key, run.tick(run.state.timers[key])))
    elif kind == "cancel":
        run.do(CancelRequested(draw(st.sampled_from(_job_ids(run))), run.tick()))
    elif kind == "retry":
        run.do(RetryRequested(draw(st.sampled_from(_job_ids(run))), run.tick()))
    elif kind in ("pause", "resume"):
        run.do(PauseRequested(draw(st.sampled_from(_job_ids(run))), kind == "pause", run.tick()))
    elif kind == "fork":
        return _fork(draw, run)
    elif kind == "submit":
        payload = {"items": [0], "p": draw(st.sampled_from([1, 2]))}
        job_id = draw(st.sampled_from(LATER_JOBS))
        run.do(JobSubmitted(job_id, "w", payload, run.tick(), reply_to="q2"))
    elif kind == "signal":
        payload = draw(st.sampled_from([{"sig": 1}, {"sig": 2}, {}, [1]]))
        waits = sorted(
            (job.id, step.name)
            for job in run.state.jobs.values()
            for step in job.steps.values()
            if step.spec.wait
        )
        if waits and draw(st.booleans()):
            job_id, step_name = draw(st.sampled_from(waits))
        else:
            job_id = draw(st.sampled_from(_job_ids(run)))
            step_name = draw(st.sampled_from(SIGNALLED))
        run.do(SignalReceived(job_id, step_name, payload, run.tick()))
    else:
        return "skipped"
    return kind


def _fork(draw: st.DrawFn, run: Run) -> str:
    """Fork one of the first jobs, as the API would seed it from the job in memory."""
    source = run.state.jobs.get(draw(st.sampled_from([JOB, OTHER_JOB])))
    if source is None:
        return "skipped"
    step = draw(st.sampled_from([*(s.name for s in source.flow.steps), "zz"]))
    kept = {
        name: (str(r.status), r.output)
        for name, r in source.steps.items()
        if name in source.flow.step_index and r.status.is_done
    }
    given = draw(st.sampled_from([None, None, {"v": 1, "items": [0]}]))
    seed = ForkSeed(source.id, step, str(source.status), copy.deepcopy(kept), input=given)
    job_id = draw(st.sampled_from(FORKS))
    run.do(JobSubmitted(job_id, "w", copy.deepcopy(source.payload), run.tick(), fork=seed))
    return "fork"


def _drive(draw: st.DrawFn, wf: Workflow, good_replies: int = 2) -> Run:
    max_running_jobs = draw(st.sampled_from([None, None, 1]))
    limits = draw(st.sampled_from(LIMIT_DRAWS))
    run = Run(
        wf, _fresh(wf, max_running_jobs, limits), good_replies=good_replies,
        max_running_jobs=max_running_jobs, limits=limits,
    )  # fmt: skip
    for job_id in [JOB, OTHER_JOB][: draw(st.integers(1, 2))]:
        payload = {"items": list(range(draw(st.integers(0, 2)))), "p": draw(st.integers(1, 2))}
        at = run.tick()
        # Some jobs start later (a delayed start: scheduled, then started by their timer).
        not_before = draw(st.sampled_from([None, None, at - 1.0, at + 2.0, at + 6.0]))
        priority = draw(st.integers(0, 2))
        meta = draw(st.sampled_from([None, {"t": {"x": 1, "y": 1}}]))
        schedule = draw(st.sampled_from([None, "s"]))
        # Pausing and resuming go in between (an unknown schedule is refused): a paused
        # schedule's firing starts no job.
        if draw(st.booleans()):
            name = draw(st.sampled_from(["s", "s", "s", "nope"]))
            paused = draw(st.sampled_from([True, True, False]))
            run.do(SchedulePaused("w", name, paused, run.tick()))
        run.do(
            JobSubmitted(
                job_id,
                "w",
                payload,
                at,
                reply_to="q1",
                not_before=not_before,
                meta=meta,
                priority=priority,
                schedule=schedule,
            )
        )
    for _ in range(draw(st.integers(10, MAX_EVENTS + 10 * (good_replies > 2)))):
        event(f"action: {_step(draw, run)}")
    return run


# -- the checks --------------------------------------------------------------------------


def _check_replay(run: Run) -> None:
    for k in range(len(run.events) + 1):
        state = replay(_fresh(run.wf, run.max_running_jobs, run.limits), run.events[:k])
        rest = [apply(state, e)[1] for e in run.events[k:]]
        assert rest == run.commands[k:], k
        assert state == run.state, k


def _check_lives(run: Run) -> None:
    # Each job: scheduled or queued (waiting to start), running, or ended.
    alive: dict[str, str] = {}
    for happened, commands in zip(run.events, run.commands, strict=True):
        # Every event is filed under its Subject, unless it was refused or rejected.
        first = (Subject, Refused, JobRejected, JobDuplicate, SchedulePauseSet)
        assert isinstance(commands[0], first), commands
        assert not any(isinstance(c, Subject) for c in commands[1:]), commands
        ended = {c.job_id for c in commands if isinstance(c, JobFinished)}
        for command in commands:
            if isinstance(command, JobScheduled):
                assert command.job_id not in alive, command
                alive[command.job_id] = "scheduled"
            elif isinstance(command, JobQueued):
                assert alive.get(command.job_id) in (None, "scheduled"), command
                alive[command.job_id] = "queued"
            elif isinstance(command, JobStarted):
                assert alive.get(command.job_id) in (None, "scheduled", "queued", "ended"), command
                alive[command.job_id] = "running"
            elif isinstance(command, JobFinished):
                # A job cancelled before it started ends without having started.
                assert alive.get(command.job_id) in ("scheduled", "queued", "running"), command
                alive[command.job_id] = "ended"
            elif isinstance(command, NotifyOutcome):
                # A submission naming a job that has ended is answered with its outcome at once.
                resubmitted = isinstance(happened, JobSubmitted)
                assert command.job_id in ended or resubmitted, command


def _check_rate(run: Run) -> None:
    """No window of the workflow's rate holds more first starts (per key) than its limit."""
    rate = run.wf.rate
    if rate is None:
        return
    firsts: dict[str, tuple[float, str]] = {}
    for happened, commands in zip(run.events, run.commands, strict=True):
        for command in commands:
            if isinstance(command, JobStarted) and command.parent_id is None:
                key = rate.key_of(command.payload) if rate.key is not None else "null"
                firsts.setdefault(command.job_id, (happened.at, key))
    for at, key in firsts.values():
        within = [a for a, k in firsts.values() if k == key and at - rate.per < a <= at]
        assert len(within) <= rate.limit, (at, key, firsts)


def _check_attempts(run: Run) -> None:
    last: dict[str, int] = defaultdict(int)
    made_again: set[str] = set()  # child jobs started (again): their steps may start at 1
    for commands in run.commands:
        for command in commands:
            if isinstance(command, JobStarted) and command.parent_id is not None:
                # An on_error task step's children, forgotten by a job retry, are made again
                # with the same ids when the branch runs again.
                made_again.add(command.job_id)
            if not isinstance(command, Dispatch):
                continue
            job = run.state.jobs.get(command.job_id)
            # A branch runs afresh after a job retry; a fallback's attempts go on counting.
            fallback = command.step.endswith("-fb")
            in_branch = job is not None and command.step not in job.flow.step_index
            restart = (in_branch and not fallback) or command.job_id in made_again
            expected = {last[command.correlation_id] + 1} | ({1} if restart else set())
            assert command.attempt in expected, (command, last[command.correlation_id])
            last[command.correlation_id] = command.attempt


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(wf=workflows(), data=st.data())
def test_random_failures_timers_and_requests_replay_exactly(wf: Workflow, data):
    run = _drive(data.draw, wf)
    _check_replay(run)
    _check_lives(run)
    _check_rate(run)
    _check_attempts(run)
    first = run.state.jobs.get(JOB)
    event(f"first job: {first.status if first is not None else 'rejected by its schema'}")
    event(f"retries dispatched: {any(d.attempt > 1 for d in run.sent)}")
    revived = any(
        isinstance(e, RetryRequested) and any(isinstance(c, JobStarted) for c in commands)
        for e, commands in zip(run.events, run.commands, strict=True)
    )
    event(f"job retried: {revived}")
    event(f"branch ran: {any(d.step[0] in 'ex' for d in run.sent)}")
    queued = any(isinstance(c, JobQueued) for commands in run.commands for c in commands)
    event(f"a job queued: {queued}")
    throttled = any(isinstance(c, JobThrottled) for commands in run.commands for c in commands)
    event(f"a job waited for its workflow's rate: {throttled}")
    held = any("release:" in getattr(e, "key", "") for e in run.events)
    event(f"a step held by its concurrency: {held}")
    signalled = [c for cs in run.commands for c in cs if isinstance(c, StepSignalled)]
    kept = any(c.kept for c in signalled)
    event(f"signals: completed {any(not c.kept for c in signalled)}, kept {kept}")
    duplicates = any(isinstance(c, JobDuplicate) for cs in run.commands for c in cs)
    later = any(
        isinstance(c, JobStarted) and c.job_id in LATER_JOBS for cs in run.commands for c in cs
    )
    event(f"unique: duplicates {duplicates}, a later job started {later}")
    debounced = any(isinstance(c, JobDebounced) for cs in run.commands for c in cs)
    event(f"a trigger debounced: {debounced}")
    event(f"fallback dispatched: {any(d.step.endswith('-fb') for d in run.sent)}")
    forked = any(isinstance(c, JobForked) for cs in run.commands for c in cs)
    event(f"a fork started: {forked}")
    contracts = [c for commands in run.commands for c in commands if isinstance(c, StepFinished)]
    broken = any("does not match" in (c.message or "") for c in contracts)
    event(f"a schema failed a step or attempt: {broken}")
    event(f"compensations dispatched: {min(sum(d.step[0] == 'u' for d in run.sent), 3)}")


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(wf=workflows(always_compensated=True), data=st.data())
def test_compensating_runs_replay_exactly(wf: Workflow, data):
    """Mostly good replies, so steps complete before a failure or cancel has them undone."""
    run = _drive(data.draw, wf, good_replies=8)
    _check_replay(run)
    _check_lives(run)
    _check_attempts(run)
    assert all(
        job.compensation is None or not job.is_settled or job.compensation.is_done
        for job in run.state.jobs.values()
    )
    undone = [d for d in run.sent if d.step[0] == "u"]
    event(f"compensations dispatched: {min(len(undone), 4)}")
    event(f"children compensated: {any(d.job_id not in (JOB, OTHER_JOB) for d in undone)}")
    event(f"compensation retried: {any(d.attempt > 1 for d in undone)}")
