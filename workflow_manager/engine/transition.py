"""The core of one event's work: the state changes it makes and the commands it produces.

The core starts, dispatches and completes steps and dispatches timers to the parts that own
them; submissions (`submission`), replies (`answers`), children (`children`) and endings
(`failures`: failed attempts, steps and jobs, branches, settling) are its other modules. Every
rule is a part (`extension.Part`) registered in `registry.PARTS`; the core calls the parts at
its extension points, passing itself as `work` (`extension.Work`). What happens when a step
completes, in order, is `Transition.complete_step` below.

Ready steps go through a FIFO, so steps that become ready together start in declaration
order and the commands come out in a deterministic order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from workflow_manager.config.models import Task
from workflow_manager.engine import children, failures, forking
from workflow_manager.engine.commands import (
    CancelTimer,
    Command,
    Dispatch,
    Ignored,
    JobFinished,
    JobStarted,
    StartTimer,
    StepFinished,
    Subject,
)
from workflow_manager.engine.extension import Parts
from workflow_manager.engine.fanin import fan_in_totals
from workflow_manager.engine.ids import canonical_uuid
from workflow_manager.engine.metadata import job_meta
from workflow_manager.engine.registry import PARTS
from workflow_manager.engine.snapshot import forget, snapshot
from workflow_manager.engine.state import EngineState, Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.timers import HELD_WORK, RetryDue, StepTimeout, Timer, parse_timer

__all__ = ["Transition", "merge"]


def merge(outputs: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Merge objects so the first one holding a key wins."""
    merged: dict[str, Any] = {}
    for output in outputs:
        for key, value in (output or {}).items():
            merged.setdefault(key, value)
    return merged


class Transition:
    """The work of one event: state changes are made here, commands collected in order."""

    def __init__(
        self, state: EngineState, at: float, parts: Parts = PARTS, *, replaying: bool = False
    ) -> None:
        self.state = state
        self.at = at
        self.parts = parts
        # A replay (`engine.replay`) discards the commands: the requests they would make are
        # not built.
        self.replaying = replaying
        self.commands: list[Command] = []
        self.ready: deque[tuple[Job, StepRun]] = deque()
        self.subject: Subject = Subject(None, None)

    # -- bookkeeping -----------------------------------------------------------------------

    def concerns(self, job: Job | None, job_id: str | None = None) -> None:
        """Note the job this event is about (for the journal); `job_id` when it is not in memory."""
        if job is not None:
            self.subject = Subject(job.id, job.root_id, job.partition)
        elif job_id is not None:
            root_id = self.root_of_gone(job_id)
            root = self.state.jobs.get(root_id) if root_id is not None else None
            self.subject = Subject(job_id, root_id, root.partition if root else None)

    def ignore(self, subject: str, reason: str) -> None:
        """Report that the event (or part of it) changes nothing, and why."""
        self.commands.append(Ignored(subject, reason))

    def find_job(self, job_id: str) -> Job | None:
        """A job by id, in any letter case."""
        return self.state.jobs.get(job_id) or self.state.jobs.get(canonical_uuid(job_id) or "")

    def root_of_gone(self, job_id: str) -> str | None:
        """The top-level job of a completed child that has left memory, if `job_id` names one."""
        return self.state.gone.root_of(job_id)

    def report_started(self, job: Job) -> None:
        """Report that a job (re)starts now (a JobStarted command; none when replaying: a
        replay's commands are not carried out, and it starts every job of the journal)."""
        if self.replaying:
            return
        self.commands.append(JobStarted(
            job.id, job.root_id, job.workflow.name, job.workflow.content_hash,
            job.flow.name, job.parent.job_id if job.parent else None, job.payload,
            job.submitted_at, self.at, job.trace_id, job.trace_parent,
        ))  # fmt: skip

    def finished(self, job: Job) -> JobFinished:
        """The JobFinished command for a job that has just settled, with its final snapshot."""
        return JobFinished(
            job.id, job.root_id, job.workflow.name, job.workflow.content_hash,
            job.flow.name, job.status, job.result, job.error,
            job.parent.job_id if job.parent else None, job.payload, job.submitted_at, self.at,
            snapshot(job), job.trace_id, job.trace_parent,
        )  # fmt: skip

    def step_finished(
        self, job: Job, run: StepRun, outcome: str, reason: str | None, message: str | None
    ) -> None:
        """Report how a step (attempt) ended, for events and metrics."""
        sent_at = run.started_at if run.spec.task is not None else run.dispatched_at
        fan_in = None
        if run.children is not None and outcome in ("completed", "failed"):
            fan_in = fan_in_totals(run)
        self.commands.append(
            StepFinished(
                job.id,
                job.root_id,
                job.workflow.name,
                run.name,
                run.attempt,
                outcome,
                reason,
                message,
                sent_at,
                self.at,
                job.trace_id,
                fan_in,
            )  # fmt: skip
        )

    def archive(self, job_id: str) -> None:
        """Drop a settled top-level job and its children from memory (its snapshot is journaled)."""
        job = self.state.jobs.get(job_id)
        if job is None or job.parent is not None or not job.is_settled:
            return  # gone already, a child, or running again after a retry: keep it
        forget(self.state, job)

    # -- timers ----------------------------------------------------------------------------

    def start_timer(self, timer: Timer, due_at: float) -> None:
        """Arm a timer (journaled with the event; the driver delivers it when due)."""
        key = timer.key
        self.state.timers[key] = due_at
        self.commands.append(StartTimer(key, due_at))

    def cancel_timer(self, timer: Timer) -> None:
        """Disarm a timer, if armed."""
        key = timer.key
        if self.state.timers.pop(key, None) is not None:
            self.commands.append(CancelTimer(key))

    def clear_step_timers(self, job: Job, run: StepRun) -> None:
        """Drop the step's reply deadline and any pending retry wait."""
        if self.state.timers:  # with no timer armed at all, there is nothing to look up
            self.cancel_timer(StepTimeout(job.id, run.name, run.attempt))
            self.cancel_timer(RetryDue(job.id, run.name, run.attempt + 1))

    def timer_fired(self, key: str) -> None:
        """A timer came due: the parts that own its class (`Part.timers`) handle it."""
        timer = parse_timer(key)
        job_id = timer.job_id if timer is not None else None
        job = self.state.jobs.get(job_id) if job_id is not None else None
        self.concerns(job, job_id)
        armed = self.state.timers.pop(key, None) is not None
        held_work = isinstance(timer, HELD_WORK)
        if not armed and not held_work:
            self.ignore(key, "timer was cancelled or already handled")
            return
        if timer is None or (job is None and not held_work):
            self.ignore(key, "timer names no job in memory")
            return
        if job is not None and self.state.paused:  # a paused job's timers wait
            for part in self.parts.of(job.workflow).timer_held:
                if part.timer_held(self, key, timer, job):
                    return
        for part in self.parts.timer_owners.get(type(timer), ()):
            part.timer_fired(self, key, timer, job)

    # -- steps -----------------------------------------------------------------------------

    def drain(self) -> None:
        """Start every ready step, including those that become ready while doing so."""
        while self.ready:
            job, run = self.ready.popleft()
            if run.status is not StepStatus.PENDING:
                continue
            if job.is_live(run.name):
                self._start_step(job, run)

    def _start_step(self, job: Job, run: StepRun) -> None:
        """A ready step: its input, then the parts (conditions, contracts, waiting), then its
        children (a task step) or its request."""
        depends = run.spec.depends
        if not depends:
            in_main = run.name in job.flow.step_index
            data = job.payload if in_main else (job.branch_input or {})
        elif len(depends) == 1:
            data = job.steps[depends[0]].output or {}
        else:
            data = merge(job.steps[name].output for name in depends)
        if job.fork is not None and (given := forking.given_input(job, run)) is not None:
            data = given
        run.input = data
        run.started_at = self.at
        for part in self.parts.of(job.workflow).step_starting_held:
            if part.step_starting_held(self, job, run, data):
                return
        if run.spec.task is not None:
            run.status = StepStatus.RUNNING
            children.fan_out(self, job, run, data)
            return
        self.dispatch(job, run)

    def dispatch(self, job: Job, run: StepRun, released: bool = False) -> None:
        """Send the next attempt of a step to its queue; a part may hold it back first (step
        concurrency), unless it was `released` by that part."""
        parts = self.parts.of(job.workflow)
        if self.state.paused:  # a paused job's requests wait, before a limit gives them a slot
            for part in parts.pause_held:
                if part.pause_held(self, job, run, released):
                    return
        if not released:
            for part in parts.dispatch_held:
                if part.dispatch_held(self, job, run):
                    return
        else:
            for part in parts.release_held:
                if part.release_held(self, job, run):
                    return
        run.status = StepStatus.RUNNING
        run.attempt += 1
        run.dispatched_at = self.at
        if not self.replaying:
            self.commands.append(self._dispatch(job, run))
        for part in parts.dispatched:
            part.dispatched(self, job, run)

    def _dispatch(self, job: Job, run: StepRun) -> Dispatch:
        """The command that sends `run`'s request: all the stages after the engine need."""
        return Dispatch(
            job_id=job.id,
            root_id=job.root_id,
            step=run.name,
            queue=run.spec.queue_name,
            correlation_id=f"{job.id}:{run.name}",
            body=run.input or {},
            workflow=job.workflow.name,
            attempt=run.attempt,
            trace_id=job.trace_id,
            priority=job.priority,
            meta=job_meta(self.state, job),
            partition=job.partition,
        )

    def complete_step(
        self,
        job: Job,
        run: StepRun,
        output: dict[str, Any],
        status: StepStatus = StepStatus.COMPLETED,
    ) -> None:
        """The step is done (completed, skipped or recovered): its dependents may go on.

        In order: its request has ended (`request_ended`: step concurrency); a part may settle
        it instead (`completion_held`: a fallback's output goes to the step it answers); its
        dependents become ready; a main-flow step is noted (`step_completed`: compensation);
        the last one completes the job (`job_stopped`, then `settle`).
        """
        parts = self.parts.of(job.workflow)
        for part in parts.request_ended:
            part.request_ended(self, job, run)
        for part in parts.completion_held:
            if part.completion_held(self, job, run, output):
                return
        run.status = status
        run.output = output
        if status is not StepStatus.RECOVERED:
            run.error = None  # a recovered step keeps the error its fallback answered
        run.finished_at = self.at
        self.step_finished(job, run, str(status), None, None)
        flow = job.flow_of(run.name)
        for name in flow.dependents[run.name]:
            dependent = job.steps[name]
            dependent.waiting_on -= 1
            if dependent.waiting_on == 0:
                self.ready.append((job, dependent))
        if flow is not job.flow:
            job.branch_left -= 1
            if job.branch_left == 0:
                failures.end_branch(self, job)
            return
        for part in parts.step_completed:
            part.step_completed(self, job, run)
        job.steps_left -= 1
        if job.steps_left == 0:
            job.status = JobStatus.COMPLETED
            job.result = merge(job.steps[name].output for name in job.flow.terminals)
            job.finished_at = self.at
            for part in parts.job_stopped:
                part.job_stopped(self, job)
            failures.settle(self, job)

    def start_children(self, job: Job, run: StepRun, task: Task) -> None:
        """Start a task step's next children, as many as may run."""
        children.start_children(self, job, run, task)

    # -- endings (see `failures`) ------------------------------------------------------------

    def attempt_failed(self, job: Job, run: StepRun, message: str, reason: str = "error") -> None:
        """One attempt failed: retry if the step's policy allows, else fail the step."""
        failures.attempt_failed(self, job, run, message, reason)

    def fail_step(self, job: Job, run: StepRun, message: str, reason: str = "error") -> None:
        """The step failed for good (unless a part answers the failure)."""
        failures.fail_step(self, job, run, message, reason)

    def job_running(self, job: Job) -> None:
        """A top-level job runs from now: the parts that care are told (its deadline)."""
        for part in self.parts.of(job.workflow).job_running:
            part.job_running(self, job)

    def fail_job(self, job: Job, error: dict[str, Any]) -> None:
        """The job failed with `error`."""
        failures.fail_job(self, job, error)

    def cancel_job(self, job: Job, message: str, with_branch: bool) -> None:
        """Cancel a running job (running its on_cancel branch when `with_branch`)."""
        failures.cancel_job(self, job, message, with_branch)

    def start_branch(self, job: Job, kind: str, data: dict[str, Any]) -> None:
        """Run the job's `kind` branch (on_error, on_cancel) with `data`, or settle it."""
        failures.start_branch(self, job, kind, data)

    def settle(self, job: Job) -> None:
        """The job is over, branch included: report it, notify, tell its parent."""
        failures.settle(self, job)
