"""The extension points: what the core offers its parts, and where it calls them.

The core (`workflow_manager.engine.transition` and its modules) does one event's work. Every
rule is a part: a `Part` that overrides the points it takes part in (the others do nothing),
registered in `workflow_manager.engine.registry.PARTS`. At each point the core calls, in
registration order, only the parts that override it (`Parts`), passing itself as `work`: the
`Work` protocol is all a part may use of it. Points named `..._held`, `..._refused`,
`..._decided` or `claims_...` return True when the part took the matter over: the core stops
there (`tolerates_...` returns True when the part allows what the core would refuse). A part
declares the timers it owns in `timers`; the core hands it those when they fire.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from workflow_manager.config.models import Step, Task, Workflow
from workflow_manager.engine.commands import Command, JobFinished
from workflow_manager.engine.events import JobSubmitted, StepReplied
from workflow_manager.engine.fairness import NO_SHARE, FairShare
from workflow_manager.engine.state import EngineState, Job, StepRun, StepStatus
from workflow_manager.engine.timers import Timer

__all__ = ["Part", "Parts", "Submission", "Work", "every_step"]


class Work(Protocol):
    """One event's work: the state, the event's time, the commands so far, the ready steps."""

    state: EngineState
    at: float
    commands: list[Command]
    ready: deque[tuple[Job, StepRun]]
    parts: Parts

    # -- bookkeeping -----------------------------------------------------------------------

    def concerns(self, job: Job | None, job_id: str | None = None) -> None:
        """Note the job this event is about, for the journal."""
        ...

    def ignore(self, subject: str, reason: str) -> None:
        """Report that the event (or part of it) changes nothing, and why."""
        ...

    def find_job(self, job_id: str) -> Job | None:
        """A job by id, in any letter case."""
        ...

    def root_of_gone(self, job_id: str) -> str | None:
        """The top-level job of a completed child that has left memory."""
        ...

    def report_started(self, job: Job) -> None:
        """Report that a job (re)starts now (a JobStarted command)."""
        ...

    def finished(self, job: Job) -> JobFinished:
        """The JobFinished command for a job that has just settled."""
        ...

    def step_finished(
        self, job: Job, run: StepRun, outcome: str, reason: str | None, message: str | None
    ) -> None:
        """Report how a step (attempt) ended, for events and metrics."""
        ...

    def start_timer(self, timer: Timer, due_at: float) -> None:
        """Arm a timer (journaled with the event; the driver delivers it when due)."""
        ...

    def cancel_timer(self, timer: Timer) -> None:
        """Disarm a timer, if armed."""
        ...

    def clear_step_timers(self, job: Job, run: StepRun) -> None:
        """Drop the step's reply deadline and any pending retry wait."""
        ...

    # -- steps -----------------------------------------------------------------------------

    def dispatch(self, job: Job, run: StepRun, released: bool = False) -> None:
        """Send the next attempt of a step (unless a part holds it back, when not `released`)."""
        ...

    def complete_step(
        self, job: Job, run: StepRun, output: dict[str, Any], status: StepStatus = ...
    ) -> None:
        """The step is done (completed, skipped or recovered): its dependents may go on."""
        ...

    def start_children(self, job: Job, run: StepRun, task: Task) -> None:
        """Start a task step's next children, as many as may run."""
        ...

    def attempt_failed(self, job: Job, run: StepRun, message: str, reason: str = ...) -> None:
        """One attempt failed: retry if the step's policy allows, else fail the step."""
        ...

    def fail_step(self, job: Job, run: StepRun, message: str, reason: str = ...) -> None:
        """The step failed for good (unless a part answers the failure)."""
        ...

    # -- jobs ------------------------------------------------------------------------------

    def job_running(self, job: Job) -> None:
        """A top-level job runs from now: the parts that care are told."""
        ...

    def fail_job(self, job: Job, error: dict[str, Any]) -> None:
        """The job failed with `error`."""
        ...

    def cancel_job(self, job: Job, message: str, with_branch: bool) -> None:
        """Cancel a running job (running its on_cancel branch when `with_branch`)."""
        ...

    def start_branch(self, job: Job, kind: str, data: dict[str, Any]) -> None:
        """Run the job's `kind` branch (on_error, on_cancel) with `data`, or settle it."""
        ...

    def settle(self, job: Job) -> None:
        """The job is over, branch included: report it, notify, tell its parent."""
        ...


@dataclass(slots=True)
class Submission:
    """A new top-level job being admitted: what parts decide about it before it exists."""

    event: JobSubmitted
    workflow: Workflow
    job_id: str
    unique_key: str | None = None  # the key it will hold (uniqueness)
    start_at: float | None = None  # a start later than now (delays)
    scopes: tuple[str, ...] = ()  # the concurrency limits it counts against (admission)
    debounce_key: str | None = None  # the debounce window it opens (debouncing)
    share: FairShare = NO_SHARE  # the fairness group its waiting work joins (fair shares)


class Part:
    """A rule of the engine. Override the points it takes part in."""

    timers: ClassVar[tuple[type[Timer], ...]] = ()
    """The timer classes this part owns: `timer_fired` gets them."""

    def used_by(self, workflow: Workflow) -> bool:
        """False when no job of `workflow` can need this part: the core then never calls it
        for them (`Parts.of`), so a workflow pays only for the features it uses."""
        return True

    # -- submissions -----------------------------------------------------------------------

    def submission_refused(self, work: Work, sub: Submission) -> bool:
        """A new job's submission, before the job exists: True after refusing it."""
        return False

    def submission_prepared(self, work: Work, sub: Submission) -> None:
        """Note on `sub` what decides how the new job starts (later, queued)."""

    def job_created(self, work: Work, job: Job, sub: Submission) -> None:
        """A new top-level job exists (started, or held back): note what it holds."""

    def start_held(self, work: Work, job: Job, sub: Submission) -> bool:
        """True when the part holds the new job's start back (it starts it later)."""
        return False

    def job_running(self, work: Work, job: Job) -> None:
        """A top-level job runs from now: submitted, started when due, or retried."""

    # -- steps -----------------------------------------------------------------------------

    def step_starting_held(self, work: Work, job: Job, run: StepRun, data: dict[str, Any]) -> bool:
        """A step is ready with input `data`: True when the part took it (skipped, failed,
        waiting) and no request is to be sent."""
        return False

    def dispatch_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """A step's next attempt is to be sent: True when the part holds it back."""
        return False

    def release_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """A step's next attempt released by a limit (its slot given: `dispatch_held` is not
        asked again) is to be sent: True when the part still holds it back (a rate limit,
        checked after the concurrency limit)."""
        return False

    def pause_held(self, work: Work, job: Job, run: StepRun, released: bool) -> bool:
        """Called only while some job is paused (`EngineState.paused`, free to check): a
        step's next attempt is to be sent (`released`: a limit gave it its slot); True when
        the part holds it back, before any other part."""
        return False

    def dispatched(self, work: Work, job: Job, run: StepRun) -> None:
        """A step's attempt was sent."""

    def claims_reply(self, work: Work, event: StepReplied) -> bool:
        """A reply arrived: True when it answers work of this part's (not a step's request)."""
        return False

    def reply_problem(
        self, work: Work, job: Job, run: StepRun, event: StepReplied, output: dict[str, Any]
    ) -> str | None:
        """A good reply's `output` for a step: why it fails the attempt after all, or None."""
        return None

    def request_ended(self, work: Work, job: Job, run: StepRun) -> None:
        """A step's request ended (answered, failed, stopped) or no longer waits to be sent."""

    def completion_held(self, work: Work, job: Job, run: StepRun, output: dict[str, Any]) -> bool:
        """A step is done with `output`: True when the part settles it instead."""
        return False

    def step_completed(self, work: Work, job: Job, run: StepRun) -> None:
        """A step of a job's main flow completed (or was skipped or recovered)."""

    def failure_held(self, work: Work, job: Job, run: StepRun, message: str, reason: str) -> bool:
        """A step failed for good: True when the part answers the failure (the job goes on)."""
        return False

    # -- a task step's children ------------------------------------------------------------

    def children_refused(
        self,
        work: Work,
        job: Job,
        run: StepRun,
        task: Task,
        data: dict[str, Any],
        items: list[Any],
    ) -> bool:
        """A task step is about to start children for `items`: True after failing the step."""
        return False

    def claims_results(self, work: Work, job: Job, run: StepRun) -> bool:
        """A task step fans out over one or more items, before any child starts: True when the
        part gathers its children's results itself (the step keeps none per child)."""
        return False

    def child_outlived(self, work: Work, parent: Job, run: StepRun, child: Job) -> None:
        """A child job settled after its task step ended (or stopped with its job): it is not
        counted; the part may say why."""

    def late_child_held(self, work: Work, parent: Job, run: StepRun, child: Job) -> bool:
        """A child job of a running task step settled: True when the step takes no more
        results (it met its join and still reduces what it has) and the part dropped it."""
        return False

    def child_settled(self, work: Work, parent: Job, run: StepRun, child: Job) -> None:
        """A child job of a running task step settled (before the parent counts it)."""

    def tolerates_failed_child(self, work: Work, parent: Job, run: StepRun, child: Job) -> bool:
        """A child job failed with its task's `max_failed_items` spent: True when the step
        still counts it rather than failing (the part fails the step itself once it must)."""
        return False

    def result_held(self, work: Work, parent: Job, run: StepRun, child: Job) -> bool:
        """A settled child counts (completed, or failed and tolerated): True when the part
        keeps its result (`claims_results`), not the step in the child's element's place."""
        return False

    def children_decided(self, work: Work, job: Job, run: StepRun, task: Task) -> bool:
        """A child counted (or a fork kept its source's): True when the children so far
        decide the step early and the part completed or failed it."""
        return False

    def next_children_held(self, work: Work, job: Job, run: StepRun, task: Task) -> bool:
        """A child counted and others are left: True when the part goes on itself (starting
        more children when it sees fit) instead of starting as many as may run."""
        return False

    def gathered_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """Every child of a task step is in: True when the part ends the step itself instead
        of completing it with the results gathered in element order."""
        return False

    # -- jobs ------------------------------------------------------------------------------

    def wind_down_held(
        self, work: Work, job: Job, kind: str, data: dict[str, Any], error: dict[str, Any]
    ) -> bool:
        """A top-level job failed or was cancelled: True when the part runs first and starts
        its `kind` branch (on_error, on_cancel) itself when done."""
        return False

    def job_stopped(self, work: Work, job: Job) -> None:
        """A job completed, failed or was cancelled: its own work is over."""

    def job_settled(self, work: Work, job: Job) -> None:
        """A job is over, branch included, before it is reported: release what it holds."""

    def cancel_held(self, work: Work, job: Job) -> bool:
        """A cancel request: True after cancelling a job that never ran; a part may also let
        go of what it holds of a running job first (returning False)."""
        return False

    def retry_refusal(self, work: Work, job: Job) -> str | None:
        """Why a failed top-level job may not be retried now, or None."""
        return None

    def job_revived(self, work: Work, job: Job) -> None:
        """A failed or cancelled job runs again (its steps are not restarted yet)."""

    # -- timers ----------------------------------------------------------------------------

    def timer_held(self, work: Work, key: str, timer: Timer, job: Job) -> bool:
        """A timer of `job`'s came due: True when the part holds it back (it fires later)."""
        return False

    def timer_fired(self, work: Work, key: str, timer: Timer, job: Job | None) -> None:
        """A timer of this part's (`timers`) came due. `job` is None only for held-back work
        (`timers.HELD_WORK`) whose job is no longer in memory."""


def _at(parts: Sequence[Part], point: str) -> tuple[Part, ...]:
    """The parts that take part at `point` (override it), in registration order."""
    default = getattr(Part, point)
    return tuple(part for part in parts if getattr(type(part), point) is not default)


def every_step(workflow: Workflow) -> Iterator[Step]:
    """Every step a job of `workflow` may run: its own, its tasks', its branches', and their
    fallbacks."""
    for flow in (workflow, *workflow.tasks, *workflow.branches.values()):
        for step in flow.steps:
            yield step
            if step.fallback_step is not None:
                yield step.fallback_step


class Parts:
    """The registered parts, by extension point; `of` narrows them to one workflow's."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self.all = tuple(parts)
        self._of: dict[str, Parts] = {}
        self.submission_refused = _at(parts, "submission_refused")
        self.submission_prepared = _at(parts, "submission_prepared")
        self.job_created = _at(parts, "job_created")
        self.start_held = _at(parts, "start_held")
        self.job_running = _at(parts, "job_running")
        self.step_starting_held = _at(parts, "step_starting_held")
        self.children_refused = _at(parts, "children_refused")
        self.dispatch_held = _at(parts, "dispatch_held")
        self.release_held = _at(parts, "release_held")
        self.pause_held = _at(parts, "pause_held")
        self.dispatched = _at(parts, "dispatched")
        self.claims_reply = _at(parts, "claims_reply")
        self.reply_problem = _at(parts, "reply_problem")
        self.request_ended = _at(parts, "request_ended")
        self.completion_held = _at(parts, "completion_held")
        self.step_completed = _at(parts, "step_completed")
        self.failure_held = _at(parts, "failure_held")
        self.claims_results = _at(parts, "claims_results")
        self.child_outlived = _at(parts, "child_outlived")
        self.late_child_held = _at(parts, "late_child_held")
        self.child_settled = _at(parts, "child_settled")
        self.tolerates_failed_child = _at(parts, "tolerates_failed_child")
        self.result_held = _at(parts, "result_held")
        self.children_decided = _at(parts, "children_decided")
        self.next_children_held = _at(parts, "next_children_held")
        self.gathered_held = _at(parts, "gathered_held")
        self.wind_down_held = _at(parts, "wind_down_held")
        self.job_stopped = _at(parts, "job_stopped")
        self.job_settled = _at(parts, "job_settled")
        self.cancel_held = _at(parts, "cancel_held")
        self.retry_refusal = _at(parts, "retry_refusal")
        self.job_revived = _at(parts, "job_revived")
        self.timer_held = _at(parts, "timer_held")
        owners: dict[type[Timer], list[Part]] = {}
        for part in parts:
            for timer in part.timers:
                owners.setdefault(timer, []).append(part)
        self.timer_owners = {timer: tuple(found) for timer, found in owners.items()}

    def of(self, workflow: Workflow) -> Parts:
        """The parts jobs of `workflow` use (`Part.used_by`), by point; built once per
        definition."""
        found = self._of.get(workflow.content_hash)
        if found is None:
            used = [part for part in self.all if part.used_by(workflow)]
            found = self._of[workflow.content_hash] = Parts(used)
        return found

    def __repr__(self) -> str:
        return f"<Parts {', '.join(type(part).__name__ for part in self.all)}>"
