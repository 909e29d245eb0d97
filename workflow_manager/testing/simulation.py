"""A workflow file run in-process: the real engine and validation, steps served by Python
functions, and a virtual clock.

Everything that would wait (a delay, a retry's backoff, a timeout, a schedule, a `wait` step's
timeout, a handler that takes time) is an entry in one agenda ordered by (virtual time, order
of arrival), so a run is deterministic and a day of delays takes no time at all. The
simulation is a driver of the engine as the manager's orchestrator is: events in, and it
carries out the commands (a request goes to its handler, a timer into the agenda); it reads
nothing of the engine's state, only the commands (`views`).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_manager.config import Workflow, load_workflows
from workflow_manager.config.joblimits import JobLimit, load_limits
from workflow_manager.engine import (
    CancelRequested,
    CancelTimer,
    Command,
    Dispatch,
    EngineState,
    Event,
    Ignored,
    JobDebounced,
    JobDuplicate,
    JobRejected,
    JobSubmitted,
    PauseRequested,
    Refused,
    RetryRequested,
    SignalReceived,
    StartTimer,
    StepReplied,
    StepWaiting,
    TimerFired,
    apply,
    timers,
)
from workflow_manager.errors import ManagerError
from workflow_manager.events.model import RunEvent, run_events
from workflow_manager.testing.handlers import Answer, HttpHandler, StepCall, http_calls, step_call
from workflow_manager.testing.views import JobView, Views

__all__ = ["Simulation", "SimulationError", "UnservedStep", "START"]

# Where virtual time starts by default (2026-01-01T00:00:00Z): fixed, so cron schedules and
# every time a run shows are the same on every run.
START = 1_767_225_600.0
# run_until_idle gives up after this many events: a workflow that never settles (a step
# retried forever) ends the run with an error instead of hanging the test.
_MAX_EVENTS = 1_000_000


class SimulationError(ManagerError):
    """A simulated run cannot go on: what was asked of it is not possible."""


class UnservedStep(SimulationError):
    """A step was dispatched to a queue nothing serves."""


@dataclass(order=True, slots=True)
class _Due:
    """An agenda entry: at `at` (then in order of `seq`), a request reaches its handler, a
    reply arrives or a timer fires."""

    at: float
    seq: int
    event: Event | Dispatch = dataclasses.field(compare=False)


class Simulation:
    """A workflow file run in-process with virtual time.

        sim = Simulation.load("workflows.yaml")
        sim.serve("segment-word-counts", count)       # a queue (or step name) and a handler
        job = await sim.start("book-word-counts", {"text": "..."})
        await sim.run_until_idle()                    # delays, retries, timeouts: instantly
        assert sim.job(job).status == "completed"

    Handlers are called one at a time, in the order their requests were sent. `now` is the
    virtual time (unix seconds); `events` every run event, as `GET /api/events` tells them.
    """

    def __init__(
        self,
        workflows: Mapping[str, Workflow],
        *,
        start_at: float = START,
        max_running_jobs: int | None = None,
        limits: Iterable[JobLimit] = (),
    ) -> None:
        self.workflows = dict(workflows)
        self.now = start_at
        self.events: list[RunEvent] = []
        self.ignored: list[str] = []  # why the engine ignored an event (late, duplicate...)
        self._state = EngineState.from_workflows(
            self.workflows, (), max_running_jobs, limits=limits
        )
        self._views = Views()
        self._calls: dict[str, StepCall] = {}
        self._agenda: list[_Due] = []
        self._timers: dict[str, _Due] = {}
        self._waits: set[str] = set()  # the timers that are waiting steps' timeouts
        self._seq = itertools.count()
        self._ids = itertools.count(1)

    @classmethod
    def load(cls, path: str | os.PathLike[str], **options: Any) -> Simulation:
        """A simulation of the workflow file `path`, validated as `serve` validates it.

        Raises:
            ConfigError: The file is invalid (each problem with its line).
        """
        workflows = load_workflows(Path(path))
        options.setdefault("limits", load_limits(Path(path)))
        return cls(workflows, **options)

    # -- what serves the steps -----------------------------------------------------------

    def serve(self, name: str, handler: Any) -> None:
        """Serve the requests of queue (or step) `name` with `handler`: `(data)` or
        `(data, ctx)`, sync or async, returning a JSON object; raising fails the attempt,
        raising `NoReply` leaves it unanswered."""
        self._calls[name] = step_call(name, handler)

    def serve_worker(self, worker: Any) -> None:
        """Serve every queue a pyworker `Worker` has a handler for, with that handler."""
        for queue, handler in worker.handlers.items():
            self._calls[queue] = step_call(queue, handler)

    def answer_with(self, name: str, call: StepCall) -> None:
        """Serve queue (or step) `name` with `call`, a request in and an `Answer` (or None: no
        answer ever) out: for canned answers (`workflow_manager.testing.fixtures`)."""
        self._calls[name] = call

    def serve_http(self, respond: HttpHandler, environ: Mapping[str, str] | None = None) -> None:
        """Serve the HTTP steps (`http:`) as the bridge does, their requests answered by
        `respond(request: httpx.Request)` with an httpx.Response or a dict (200, as JSON).
        `environ` fills the `${VAR}`s of their headers (default: the process environment)."""
        env = os.environ if environ is None else environ
        self._calls.update(http_calls(self.workflows, respond, env))

    # -- what a test does ----------------------------------------------------------------

    async def start(
        self,
        workflow: str,
        payload: dict[str, Any] | None = None,
        *,
        job_id: str | None = None,
        meta: dict[str, Any] | None = None,
        delay: float = 0.0,
        priority: int = 0,
    ) -> str:
        """Submit a job (as a trigger would) and return its id; it runs on the next
        `run_until_idle` or `advance`. A trigger that joins an open `debounce` window returns
        the id of the window's job.

        Raises:
            SimulationError: The submission was rejected (an unknown workflow, a payload that
                breaks its schema) or is a duplicate of a running job's unique key.
        """
        job = job_id or str(uuid.UUID(int=next(self._ids), version=4))
        definition = self._state.current.get(workflow)
        event = JobSubmitted(
            job, workflow, payload if payload is not None else {}, self.now,
            definition=definition, not_before=self.now + delay if delay else None,
            priority=priority, meta=meta,
        )  # fmt: skip
        for command in await self._apply(event):
            if isinstance(command, JobRejected):
                raise SimulationError(f"job {job} rejected: {command.reason}")
            if isinstance(command, JobDuplicate):
                raise SimulationError(
                    f"job {job} not started: job {command.existing} has its unique key"
                )
            if isinstance(command, JobDebounced):
                return command.existing
        return job

    async def signal(self, job_id: str, step: str, payload: dict[str, Any] | None = None) -> None:
        """Send a signal to a waiting step; SimulationError when it is refused."""
        await self._control(SignalReceived(job_id, step, payload or {}, self.now))

    async def cancel(self, job_id: str) -> None:
        """Cancel a job; SimulationError when it is refused (not running, unknown)."""
        await self._control(CancelRequested(job_id, self.now))

    async def retry(self, job_id: str) -> None:
        """Retry a failed job from where it failed; SimulationError when it is refused."""
        await self._control(RetryRequested(job_id, self.now))

    async def pause(self, job_id: str) -> None:
        """Pause a running job: no new request of it goes out and its timers wait."""
        await self._control(PauseRequested(job_id, True, self.now))

    async def resume(self, job_id: str) -> None:
        """Resume a paused job: what it held back goes out now."""
        await self._control(PauseRequested(job_id, False, self.now))

    async def run_until_idle(self, *, max_events: int = _MAX_EVENTS) -> None:
        """Run until what comes next waits for the outside world: every request answered and
        every timer fired however far ahead (the clock moved to each), up to a waiting step's
        timeout, which `advance` (or a signal first) decides."""
        for _ in range(max_events):
            if not self._agenda or self._waits_outside(self._agenda[0].event):
                return
            await self._next()
        raise SimulationError(f"still running after {max_events} events: does a step never end?")

    async def advance(self, seconds: float) -> None:
        """Move the clock `seconds` forward, doing what falls due meanwhile, in order; and
        fire the schedules' firings in that window."""
        until = self.now + seconds
        await self._fire_schedules(until)
        while self._agenda and self._agenda[0].at <= until:
            await self._next()
        self.now = max(self.now, until)

    # -- what a test reads ---------------------------------------------------------------

    def job(self, job_id: str) -> JobView:
        """The job `job_id` as the run's commands told it (KeyError when there is none)."""
        view = self._views.jobs.get(job_id)
        if view is None:
            raise KeyError(f"no job {job_id} in this run")
        return view

    @property
    def jobs(self) -> list[JobView]:
        """Every job of the run (children too), in the order they were first seen."""
        return list(self._views.jobs.values())

    # -- the driver ----------------------------------------------------------------------

    async def _control(self, event: Event) -> None:
        for command in await self._apply(event):
            if isinstance(command, Refused):
                raise SimulationError(command.reason)

    async def _next(self) -> None:
        due = heapq.heappop(self._agenda)
        self.now = max(self.now, due.at)
        if isinstance(due.event, Dispatch):
            await self._deliver(due.event)
            return
        if isinstance(due.event, TimerFired):
            if self._timers.get(due.event.key) is not due:
                return  # cancelled, or armed again for another time
            del self._timers[due.event.key]
            self._waits.discard(due.event.key)
        await self._apply(dataclasses.replace(due.event, at=self.now))

    async def _apply(self, event: Event) -> list[Command]:
        _, commands = apply(self._state, event)
        self._views.observe(commands)
        self._views.gathered(self._state, commands)
        waits = {(c.job_id, c.step) for c in commands if isinstance(c, StepWaiting)}
        if waits:  # the deadlines armed with them are the waits' timeouts
            for command in commands:
                if isinstance(command, StartTimer) and _step_of(command.key) in waits:
                    self._waits.add(command.key)
        self.events.extend(run_events(commands, self.now))
        for command in commands:
            await self._carry_out(command)
        return commands

    async def _carry_out(self, command: Command) -> None:
        if isinstance(command, Dispatch):
            self._push(self.now, command)  # its worker takes it from the queue in turn
        elif isinstance(command, StartTimer):
            due = self._push(command.due_at, TimerFired(command.key, command.due_at))
            self._timers[command.key] = due
        elif isinstance(command, CancelTimer):
            self._timers.pop(command.key, None)
        elif isinstance(command, Ignored):
            self.ignored.append(f"{command.subject}: {command.reason}")

    async def _deliver(self, dispatch: Dispatch) -> None:
        """Hand a request to its handler now; its answer arrives on the agenda."""
        call = self._calls.get(dispatch.queue) or self._calls.get(dispatch.step)
        if call is None:
            served = ", ".join(sorted(self._calls)) or "nothing"
            raise UnservedStep(
                f"step '{dispatch.step}' of workflow '{dispatch.workflow}' was sent to queue "
                f"'{dispatch.queue}', which nothing serves (serving: {served}); serve it with "
                f"sim.serve({dispatch.queue!r}, handler)"
            )
        self._views.sent(dispatch.job_id, dispatch.step, dispatch.attempt, self.now)
        answer = await call(dispatch)
        if answer is None:
            return
        self._answered(dispatch, answer)
        at = self.now + answer.after
        reply = StepReplied(
            dispatch.job_id, dispatch.step, answer.body, at, answer.error, dispatch.attempt,
            answer.meta_patch,
        )  # fmt: skip
        self._push(at, reply)

    def _answered(self, dispatch: Dispatch, answer: Answer) -> None:
        if answer.error is None:
            output = json.loads(answer.body)
            self._views.answered(dispatch.job_id, dispatch.step, dispatch.attempt, output)

    def _waits_outside(self, event: Event | Dispatch) -> bool:
        """True for a waiting step's timeout: what comes before it is a signal, or time."""
        return isinstance(event, TimerFired) and event.key in self._waits

    def _push(self, at: float, event: Event | Dispatch) -> _Due:
        due = _Due(at, next(self._seq), event)
        heapq.heappush(self._agenda, due)
        return due

    async def _fire_schedules(self, until: float) -> None:
        """Submit every schedule firing in (now, until], as the manager's scheduler would."""
        from workflow_manager.config.schedules import schedule_job_id

        firings = []
        for workflow in self.workflows.values():
            for schedule in workflow.schedules:
                at = schedule.next_fire(self.now)
                while at <= until:
                    firings.append((at, workflow.name, schedule))
                    at = schedule.next_fire(at)
        for at, name, schedule in sorted(firings, key=lambda f: f[0]):
            while self._agenda and self._agenda[0].at <= at:
                await self._next()
            self.now = at
            job_id = schedule_job_id(name, schedule.name, at)
            event = JobSubmitted(
                job_id, name, dict(schedule.payload), at,
                definition=self._state.current.get(name), schedule=schedule.name,
            )  # fmt: skip
            await self._apply(event)


def _step_of(key: str) -> tuple[str, str | None] | None:
    """The (job, step) a timer key names, if it names a step."""
    parsed = timers.parse(key)
    return (parsed.job_id, parsed.step) if parsed is not None else None
