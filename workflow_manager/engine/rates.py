"""Step rate limits: at most `rate.limit` requests of a step started in any `rate.per`
seconds, per value of `rate.key` (over the step's input, `meta.<field>` for metadata).

A dispatch goes at once when its window (`workflow_manager.engine.ratewindow`) has room and
nothing waits in it; else the step is `throttled`: it waits in the window's line (highest
priority, then oldest; with `fairness`, round-robin across keys), and one release timer is
armed for the line's next turn, due when the window lets a start go. When it fires, that
step is dispatched and the next turn is armed. The start is counted when the request is sent
(`dispatched`), once per (job, step, attempt), so a start fed twice (the journal's history at
recovery, then the replay) counts once.

With `concurrency` on the same step, the concurrency limit is checked first: a step takes its
slot, then waits for its turn under the rate while holding it (`release_held`: a slot given
by the concurrency limit does not skip the rate). Neither limit is exceeded: requests out
never pass the slots, and starts are counted when sent.

The limit a window may use is read through `allowed_limit`: the configured one with one
manager; with several (partitions), each partition's window may use its quota of it
(`workflow_manager.engine.quotas`), so the cluster together keeps the rate.

As for step concurrency (`workflow_manager.engine.gates`), the release is journaled under the
job it dispatches and obeyed as it comes, so a replay of only the running jobs follows the live
run. A part (`workflow_manager.engine.extension.Part`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from workflow_manager.config.models import Rate, Step, Workflow
from workflow_manager.engine.commands import Command, StepThrottled, ThrottleEnded
from workflow_manager.engine.events import RateHistory
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.fairshares import step_share
from workflow_manager.engine.metadata import job_meta, key_data
from workflow_manager.engine.quotas import RATE, partition_name, quota_limit, quota_name
from workflow_manager.engine.ratewindow import RateWindow, waits_until
from workflow_manager.engine.state import EngineState, Job, Rank, StepRun, StepStatus
from workflow_manager.engine.timers import RateRelease, Timer

__all__ = [
    "StepRates",
    "allowed_limit",
    "arm_window",
    "rate_window",
    "rated_steps",
    "remember_history",
    "step_window_name",
]

_SWEEP = 2
"""Idle windows checked for leaving memory per window used (the least recently used)."""


def allowed_limit(state: EngineState, name: str, rate: Rate) -> int:
    """The starts per window window `name` may use of `rate`: all of it with one manager, its
    partition's quota with several (0 until granted)."""
    return quota_limit(state, RATE, name, rate.limit)


def step_window_name(state: EngineState, job: Job, run: StepRun) -> str:
    """The window a step's starts count in: `step:<workflow>:<flow>:<step>:<key value>`."""
    rate = run.spec.rate
    assert rate is not None  # only steps with a rate have a window
    key = "null"
    if rate.expression is not None:
        key = rate.key_of(key_data(run.input or {}, job_meta(state, job)))
    base = _window_name(job.workflow.name, job.flow_of(run.name).name, run.name, key)
    return quota_name(state, base, job)


def _window_name(workflow: str, flow: str, step: str, key: str) -> str:
    return f"step:{workflow}:{flow}:{step}:{key}"


def remember_history(state: EngineState, event: RateHistory) -> list[Command]:
    """Count the starts read from the journal (`RateHistory`) in their windows, as the live
    run did: the windows outlive a restart. A start counted already counts once."""
    for start in event.starts:
        workflow = state.workflow(start.workflow)
        if workflow is None:
            continue
        for flow, step in _rated_steps(workflow, start.step, start.queue):
            rate = step.rate
            assert rate is not None  # _rated_steps finds steps with a rate
            if start.at <= event.at - rate.per:
                continue
            key = "null"
            if rate.expression is not None:
                key = rate.key_of(key_data(start.input, start.meta))
            base = _window_name(workflow.name, flow, step.name, key)
            name = partition_name(state, base, start.partition)
            window = _window(state, name, rate, event.at)
            window.record(start.at, f"{start.job_id}:{step.name}:{start.attempt}")
    return []


def rated_steps(workflows: Iterable[Workflow]) -> tuple[set[str], float]:
    """The names of the steps with a `rate` in `workflows`, and their longest window: what
    recovery reads of the journal for `RateHistory`."""
    names: set[str] = set()
    longest = 0.0
    for workflow in workflows:
        for step in every_step(workflow):
            if step.rate is not None:
                names.add(step.name)
                longest = max(longest, step.rate.per)
    return names, longest


def _rated_steps(workflow: Workflow, name: str, queue: str) -> Iterator[tuple[str, Step]]:
    """The steps named `name` with a rate sending to `queue`, with the name of their flow (a
    fallback's is its step's)."""
    for flow in (workflow, *workflow.tasks, *workflow.branches.values()):
        for step in flow.steps:
            for candidate in (step, step.fallback_step):
                if (
                    candidate is not None and candidate.name == name
                    and candidate.rate is not None and candidate.queue_name == queue
                ):  # fmt: skip
                    yield flow.name, candidate


def _holder(job: Job, run: StepRun) -> str:
    return f"{job.id}:{run.name}"


def _rank(job: Job, run: StepRun) -> Rank:
    return (-job.priority, run.throttled_at or 0.0, _holder(job, run))


def rate_window(state: EngineState, name: str, rate: Rate, at: float) -> RateWindow:
    """Window `name` of `rate`, made on first use (`workflow_manager.engine.jobrates` keeps its
    windows among the steps': idle ones leave memory alike)."""
    return _window(state, name, rate, at)


def _window(state: EngineState, name: str, rate: Rate, at: float) -> RateWindow:
    """Window `name` (made on first use), now the most recently used; the least recently
    used idle ones leave memory, so keyed windows do not pile up."""
    rates = state.rates
    window = rates.pop(name, None)
    if window is None:
        window = RateWindow(rate.limit, rate.per)
    window.limit, window.per = rate.limit, rate.per  # a new definition's rate counts now
    if state.quotas is not None:
        quota_limit(state, RATE, name, rate.limit)  # its use is reported: a replay's too
    for _ in range(_SWEEP):
        oldest = next(iter(rates), None)
        if oldest is None or not rates[oldest].is_idle(at):
            break
        del rates[oldest]
    rates[name] = window
    return window


class StepRates(Part):
    """Hold dispatches of a step with `rate` until its window lets them go."""

    timers = (RateRelease,)

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a step that has `rate`."""
        return any(step.rate is not None for step in every_step(workflow))

    def dispatch_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """The step's next attempt goes now if its window has room, else it is throttled."""
        return run.spec.rate is not None and _throttled(work, job, run, run.spec.rate)

    def release_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """A step given its concurrency slot still needs its turn under the rate."""
        return run.spec.rate is not None and _throttled(work, job, run, run.spec.rate)

    def dispatched(self, work: Work, job: Job, run: StepRun) -> None:
        """Count the start in the step's window."""
        rate = run.spec.rate
        if rate is not None:
            name = step_window_name(work.state, job, run)
            window = _window(work.state, name, rate, work.at)
            window.record(work.at, f"{job.id}:{run.name}:{run.attempt}")

    def request_ended(self, work: Work, job: Job, run: StepRun) -> None:
        """A throttled step that no longer waits (answered, cancelled, its job ended) leaves
        the line; the next turn is armed again if it was its."""
        rate = run.spec.rate
        if rate is None or run.status is not StepStatus.THROTTLED:
            return
        name = step_window_name(work.state, job, run)
        window = _window(work.state, name, rate, work.at)
        window.waiting.leave(_rank(job, run))
        run.throttled_until = None
        if window.armed == _holder(job, run):
            work.cancel_timer(RateRelease(job.id, run.name, run.attempt + 1))
            window.armed = None
        _arm(work, window, name)

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A throttled step's turn came: dispatch it (the journal says it was), arm the next."""
        match timer:
            case RateRelease(step=step, attempt=attempt) if job is not None:
                run = job.steps.get(step)
                if (
                    run is not None and run.spec.rate is not None
                    and run.status is StepStatus.THROTTLED
                    and attempt == run.attempt + 1 and job.is_live(run.name)
                ):  # fmt: skip
                    _release(work, job, run, run.spec.rate)
                    return
        work.ignore(key, "the job or step no longer waits for its rate")


def _throttled(work: Work, job: Job, run: StepRun, rate: Rate) -> bool:
    """True after putting the step in its window's line; False when it may go now."""
    name = step_window_name(work.state, job, run)
    window = _window(work.state, name, rate, work.at)
    holder = _holder(job, run)
    if window.passing == holder or window.counts(f"{holder}:{run.attempt + 1}"):
        # Its turn came, or the journal's history says this attempt was sent: a replay at
        # recovery meets its own start, counted already, and must not wait for it.
        return False
    window.forget_before(work.at)
    limit = allowed_limit(work.state, name, rate)
    if not window.waiting and window.has_room(work.at, limit):
        window.waiting.took_turn(step_share(work.state, job, run))
        return False
    run.status = StepStatus.THROTTLED
    run.throttled_at = work.at
    run.throttled_until = waits_until(window.free_at(work.at, limit))
    window.waiting.wait(_rank(job, run), step_share(work.state, job, run))
    _arm(work, window, name)
    work.commands.append(
        StepThrottled(
            job.id, job.root_id, job.workflow.name, run.name, work.at,
            run.throttled_until, job.trace_id,
        )
    )  # fmt: skip
    return True


def arm_window(work: Work, name: str) -> None:
    """Window `name` may have room earlier (its quota grew): arm its next turn again."""
    _arm(work, work.state.rates[name], name)


def _arm(work: Work, window: RateWindow, name: str) -> None:
    """Arm the release timer of the line's next turn, due when the window allows a start (not
    while its quota is 0: `arm_window` arms it once one is granted)."""
    head = window.waiting.next()
    if head is None:
        return
    job_id, _, step = head[2].partition(":")
    waiting = work.state.jobs[job_id]
    run = waiting.steps[step]
    timer = RateRelease(job_id, step, run.attempt + 1)
    if window.armed is not None and window.armed != head[2]:
        armed_job, _, armed_step = window.armed.partition(":")
        armed = work.state.jobs.get(armed_job)
        if armed is not None and armed_step in armed.steps:
            attempt = armed.steps[armed_step].attempt + 1
            work.cancel_timer(RateRelease(armed_job, armed_step, attempt))
    due = window.free_at(work.at, quota_limit(work.state, RATE, name, window.limit))
    run.throttled_until = waits_until(due)
    if math.isinf(due):
        if window.armed == head[2]:
            work.cancel_timer(timer)
        window.armed = None
        return
    window.armed = head[2]
    if work.state.timers.get(timer.key) != due:
        work.start_timer(timer, due)


def _release(work: Work, job: Job, run: StepRun, rate: Rate) -> None:
    """Dispatch a throttled step whose turn came, then arm the next turn. A timer that fired
    a moment early (the driver's clock is not the timer's) is armed again for its time."""
    name = step_window_name(work.state, job, run)
    window = _window(work.state, name, rate, work.at)
    holder = _holder(job, run)
    if window.armed == holder and not window.has_room(
        work.at, allowed_limit(work.state, name, rate)
    ):
        _arm(work, window, name)
        return
    window.waiting.release(_rank(job, run))
    if window.armed == holder:
        window.armed = None
    run.throttled_until = None
    window.passing = holder
    try:
        work.dispatch(job, run, released=True)
    finally:
        window.passing = None
    if run.status is StepStatus.RUNNING and run.dispatched_at == work.at:
        waited = work.at - (run.throttled_at or work.at)
        work.commands.append(ThrottleEnded(job.id, job.workflow.name, run.name, work.at, waited))
    _arm(work, window, name)
