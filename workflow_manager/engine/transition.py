"""One event's work: the state changes it makes and the commands it produces, in order.

Ready steps go through a FIFO, so steps that become ready together start in declaration
order and the commands come out in a deterministic order. Failure rules and job control
live in their own modules (`failures`, `control`), written against `workflow_manager.engine.work`.
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Iterable
from typing import Any

from workflow_manager.config.models import Flow, Task, Workflow
from workflow_manager.engine import timers
from workflow_manager.engine.admission import Admission
from workflow_manager.engine.commands import (
    Command,
    Dispatch,
    Ignored,
    JobFinished,
    JobRejected,
    JobStarted,
    NotifyOutcome,
    StepFinished,
    Subject,
)
from workflow_manager.engine.compensation import CompensationRules
from workflow_manager.engine.conditions import ConditionRules
from workflow_manager.engine.contracts import ContractRules, output_problem, payload_problem
from workflow_manager.engine.control import JobControl
from workflow_manager.engine.delays import DelayedStarts
from workflow_manager.engine.events import JobSubmitted, StepReplied
from workflow_manager.engine.failures import FailureRules, outcome_body
from workflow_manager.engine.fallbacks import FallbackRules
from workflow_manager.engine.fanout import (
    FanOutError,
    child_ids,
    child_payload,
    copies_problem,
    gather,
    item_list,
)
from workflow_manager.engine.gates import StepGates
from workflow_manager.engine.ids import canonical_uuid
from workflow_manager.engine.jsontext import json_type
from workflow_manager.engine.metadata import MetadataRules, key_data
from workflow_manager.engine.redelivery import is_repeat, reply_digest
from workflow_manager.engine.replies import ReplyError, decode_output
from workflow_manager.engine.scheduling import ScheduleRules
from workflow_manager.engine.snapshot import forget, root_of, snapshot
from workflow_manager.engine.state import (
    EngineState,
    Job,
    JobStatus,
    ParentLink,
    StepRun,
    StepStatus,
)
from workflow_manager.engine.traceids import derived_trace_id, step_span_id
from workflow_manager.engine.uniqueness import UniqueJobs
from workflow_manager.engine.waiting import WaitingSteps

__all__ = ["Transition"]

# Steps a reply may still complete: a good reply for an earlier attempt wins, even while the
# next attempt waits for its backoff (retrying) or for a slot under the step's limit (queued).
_ANSWERABLE = (StepStatus.RUNNING, StepStatus.RETRYING, StepStatus.QUEUED)


def _merge(outputs: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Merge objects so the first one holding a key wins."""
    merged: dict[str, Any] = {}
    for output in outputs:
        for key, value in (output or {}).items():
            merged.setdefault(key, value)
    return merged


class Transition(
    FailureRules,
    CompensationRules,
    JobControl,
    ConditionRules,
    FallbackRules,
    ContractRules,
    MetadataRules,
    DelayedStarts,
    Admission,
    StepGates,
    ScheduleRules,
    WaitingSteps,
    UniqueJobs,
):
    """The work of one event: state changes are made here, commands collected in order."""

    def __init__(self, state: EngineState, at: float) -> None:
        self.state = state
        self.at = at
        self.commands: list[Command] = []
        self.ready: deque[tuple[Job, StepRun]] = deque()
        self.subject: Subject = Subject(None, None)

    def concerns(self, job: Job | None, job_id: str | None = None) -> None:
        """Note the job this event is about (for the journal); `job_id` when it is not in memory."""
        if job is not None:
            self.subject = Subject(job.id, job.root_id, job.partition)
        elif job_id is not None:
            root_id = self.root_of_gone(job_id)
            root = self.state.jobs.get(root_id) if root_id is not None else None
            self.subject = Subject(job_id, root_id, root.partition if root else None)

    def started(self, job: Job) -> JobStarted:
        """The JobStarted command for a job that (re)starts now."""
        return JobStarted(
            job.id, job.root_id, job.workflow.name, job.workflow.content_hash,
            job.flow.name, job.parent.job_id if job.parent else None, job.payload,
            job.submitted_at, self.at, job.trace_id, job.trace_parent,
        )  # fmt: skip

    def step_finished(
        self, job: Job, run: StepRun, outcome: str, reason: str | None, message: str | None
    ) -> None:
        """Report how a step (attempt) ended, for events and metrics."""
        sent_at = run.started_at if run.spec.task is not None else run.dispatched_at
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
            )  # fmt: skip
        )

    def finished(self, job: Job) -> JobFinished:
        """The JobFinished command for a job that has just settled, with its final snapshot."""
        return JobFinished(
            job.id, job.root_id, job.workflow.name, job.workflow.content_hash,
            job.flow.name, job.status, job.result, job.error,
            job.parent.job_id if job.parent else None, job.payload, job.submitted_at, self.at,
            snapshot(job), job.trace_id, job.trace_parent,
        )  # fmt: skip

    def archive(self, job_id: str) -> None:
        """Drop a settled top-level job and its children from memory (its snapshot is journaled)."""
        job = self.state.jobs.get(job_id)
        if job is None or job.parent is not None or not job.is_settled:
            return  # gone already, a child, or running again after a retry: keep it
        forget(self.state, job)

    def find_job(self, job_id: str) -> Job | None:
        """A job by id, in any letter case."""
        return self.state.jobs.get(job_id) or self.state.jobs.get(canonical_uuid(job_id) or "")

    def root_of_gone(self, job_id: str) -> str | None:
        """The top-level job of a completed child that has left memory, if `job_id` names one."""
        return self.state.gone.get(job_id) or self.state.gone.get(canonical_uuid(job_id) or "")

    # -- submissions -------------------------------------------------------------------

    def submit(self, event: JobSubmitted) -> None:
        """Start a job, or answer a duplicate submission."""
        job_id = canonical_uuid(event.job_id)
        workflow = self.state.workflow(event.workflow, event.definition)
        rejection = self._rejection(event, job_id, workflow)
        if rejection is not None:
            kind, reason = rejection
            self.commands.append(
                JobRejected(event.job_id, event.workflow, reason, event.reply_to, kind)
            )
            return
        assert job_id is not None and workflow is not None  # narrowed by _rejection
        existing = self.state.jobs.get(job_id)
        if existing is not None:
            self.concerns(existing)
            self._resubmitted(existing, event.reply_to)
            return
        root = self.state.gone.get(job_id)
        if root is not None:
            # A completed child, out of memory while its top-level job lives: the id is taken.
            self.concerns(None, job_id)
            self._ignore(job_id, f"job {job_id} completed already, as a child job of job {root}")
            return
        if workflow.payload_schema is not None and (
            problem := payload_problem(workflow, event.payload)
        ):
            # Checked for a new job only: a duplicate trigger is answered, whatever its payload.
            self.commands.append(JobRejected(event.job_id, event.workflow, problem, event.reply_to))
            return
        if event.schedule is not None and self._firing_skipped(event, workflow):
            return
        key = self._claim(workflow, event) if workflow.unique is not None else None
        if workflow.unique is not None and key is None:
            return  # refused: a duplicate of an unfinished job, or a key that cannot be read
        trace = (event.trace_id or derived_trace_id(job_id), event.trace_parent)
        delayed = event.not_before is not None and event.not_before > self.at
        limited = workflow.concurrency is not None or self.state.max_running_jobs is not None
        scopes = self._scopes_of(workflow, key_data(event.payload, event.meta)) if limited else ()
        job = self._create_job(
            workflow, workflow, job_id, event.payload, None, trace, event.priority,
            not (delayed or scopes), scopes, event.partition,
        )  # fmt: skip
        self.concerns(job)
        self._begin(job, event, key, delayed)

    def _begin(self, job: Job, event: JobSubmitted, key: str | None, delayed: bool) -> None:
        """A new top-level job's metadata, schedule, unique key and senders; then its start:
        later (delayed), when a slot is free (queued), or now."""
        job.meta = event.meta
        if event.schedule is not None:
            self._fired(event, job.workflow, job.id)
        if key is not None:
            self._hold_key(job, key)
        if event.reply_to:
            job.reply_to.append(event.reply_to)
        if delayed:
            self._schedule(job, event.not_before or self.at)  # then queued, if limited
        elif job.scopes:
            self._enqueue(job)  # it starts when its admit timer fires, maybe at once
        elif job.workflow.timeout is not None:
            self._start_timer(timers.job_timeout(job.id), self.at + job.workflow.timeout)

    def _rejection(
        self, event: JobSubmitted, job_id: str | None, wf: Workflow | None
    ) -> tuple[str, str] | None:
        """(kind, reason) when the submission must be refused, else None."""
        if job_id is None:
            return "invalid-id", f"job id {event.job_id!r} is not a UUID"
        if wf is None:
            return "unknown-workflow", self._unknown_workflow(event)
        if not isinstance(event.payload, dict):
            found = json_type(event.payload)
            return "invalid-payload", f"payload must be a JSON object, got {found}"
        return None

    def _unknown_workflow(self, event: JobSubmitted) -> str:
        current = self.state.current.get(event.workflow)
        if event.definition is not None and current is not None:
            # The name is known, only the pinned version is not: "did you mean 'w'" would mislead.
            return (
                f"workflow '{event.workflow}' has no version {event.definition} "
                f"(loaded versions do not include it; current: {current})"
            )
        known = sorted(self.state.current)
        hint = difflib.get_close_matches(event.workflow, known, n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        names = ", ".join(known) or "none"
        return f"unknown workflow '{event.workflow}' (known: {names}){suggestion}"

    def _resubmitted(self, job: Job, reply_to: str | None) -> None:
        self.commands.append(Ignored(job.id, "a job with this id already exists"))
        if not reply_to:
            return
        if not job.is_settled:
            if reply_to not in job.reply_to:
                job.reply_to.append(reply_to)
        else:
            body = outcome_body(job.status, job.result, job.error)
            root_id = root_of(self.state, job)
            self.commands.append(NotifyOutcome(reply_to, job.id, root_id, job.status, body))

    def _create_job(
        self,
        workflow: Workflow,
        flow: Flow,
        job_id: str,
        payload: dict[str, Any],
        parent: ParentLink | None,
        trace: tuple[str, str | None],
        priority: int = 0,
        start: bool = True,
        scopes: tuple[str, ...] = (),
        partition: int | None = None,
    ) -> Job:
        """A new job, started unless `start` is False: `trace` is its trace id and the span its
        own span hangs from.

        A child takes its parent's priority (`priority` is a top-level job's own). `scopes`
        are the concurrency limits a top-level job counts against; `partition` where it was
        placed (a child's is its top-level job's).
        """
        steps = {s.name: StepRun(spec=s, waiting_on=len(set(s.depends))) for s in flow.steps}
        job = Job(job_id, workflow, flow, payload, self.at, steps, len(steps), parent)
        if parent is not None:
            above = self.state.jobs[parent.job_id]
            job.root_id, job.priority = above.root_id, above.priority
            job.partition = above.partition
        else:
            job.root_id, job.priority, job.partition = job_id, priority, partition
        job.trace_id, job.trace_parent = trace
        if workflow.compensates:
            job.done_order = []
        self.state.jobs[job_id] = job
        if scopes:
            job.scopes = scopes
        if not start:
            return job
        self.commands.append(self.started(job))
        self.ready.extend((job, run) for run in steps.values() if run.waiting_on == 0)
        return job

    # -- replies -----------------------------------------------------------------------

    def reply(self, event: StepReplied) -> None:
        """A worker's answer: complete the step, or fail this attempt of it."""
        if self.state.compensating and self.compensation_reply(event):
            return
        target = self._reply_target(event)
        if target is None:
            return
        job, run = target
        error = event.error
        output: dict[str, Any] = {}
        reason = "error"
        if error is None:
            try:
                output = decode_output(event.body)
            except ReplyError as exc:
                error, reason = str(exc), "invalid_reply"
        if error is None and run.spec.output_schema is not None:
            if (error := output_problem(run, output)) is not None:
                reason = "invalid_reply"
        if error is None and event.meta_patch is not None:
            if (error := self._patch_meta(job, event.meta_patch)) is not None:
                reason = "invalid_reply"
        if error is None:
            # The first good reply wins, even one for an earlier attempt than the latest.
            self._clear_step_timers(job, run)
            self._complete_step(job, run, output)
        elif event.attempt is not None and event.attempt < run.attempt:
            self._ignore(
                event.correlation_id, f"failed reply for superseded attempt {event.attempt}"
            )
        elif run.status in (StepStatus.RETRYING, StepStatus.QUEUED):
            self._ignore(event.correlation_id, "failed reply for an attempt that already failed")
        else:
            run.counted_reply = reply_digest(event)
            self._attempt_failed(job, run, error or "worker reported an error", reason)

    def _reply_target(self, event: StepReplied) -> tuple[Job, StepRun] | None:
        """The running step a reply answers, or None after reporting why it answers none."""
        cid, job_id, step = event.correlation_id, event.job_id, event.step
        job = self.find_job(job_id)
        self.concerns(job, job_id)
        if job is None:
            return self._ignore(cid, f"no job {job_id}")
        run = job.steps.get(step)
        in_branch = (
            run is not None
            and job.branch_left > 0
            and step not in job.flow.step_index
            and run.recovers is None  # a fallback ends with its job: late replies are dropped
        )
        if not job.is_running and not in_branch:
            return self._ignore(cid, f"job {job_id} is already {job.status}; late reply dropped")
        if run is None:
            return self._ignore(cid, f"job {job_id} ({job.flow.name}) has no step '{step}'")
        if run.spec.task is not None:
            return self._ignore(cid, f"step '{step}' is a task step; no worker answers it")
        if run.status not in _ANSWERABLE or run.attempt == 0:
            return self._ignore(cid, f"step '{step}' is {run.status}; duplicate or late reply")
        if event.attempt is not None and not 1 <= event.attempt <= run.attempt:
            return self._ignore(
                cid, f"reply is for attempt {event.attempt}, but step '{step}' is on {run.attempt}"
            )
        if is_repeat(event, run.counted_reply):
            return self._ignore(cid, "redelivered copy of a reply already counted")
        return job, run

    def _ignore(self, subject: str, reason: str) -> None:
        self.commands.append(Ignored(subject, reason))
        return None

    # -- steps -------------------------------------------------------------------------

    def drain(self) -> None:
        """Start every ready step, including those that become ready while doing so."""
        while self.ready:
            job, run = self.ready.popleft()
            if run.status is not StepStatus.PENDING:
                continue
            if job.is_live(run.name):
                self._start_step(job, run)

    def _start_step(self, job: Job, run: StepRun) -> None:
        depends = run.spec.depends
        if not depends:
            in_main = run.name in job.flow.step_index
            data = job.payload if in_main else (job.branch_input or {})
        elif len(depends) == 1:
            data = job.steps[depends[0]].output or {}
        else:
            data = _merge(job.steps[name].output for name in depends)
        run.input = data
        run.started_at = self.at
        if run.spec.when is not None and self._skipped(job, run, data):
            return
        if run.spec.input_schema is not None and self._input_rejected(job, run, data):
            return
        if run.spec.task is not None:
            run.status = StepStatus.RUNNING
            self._fan_out(job, run, data)
            return
        if run.spec.wait:
            self._wait(job, run)
            return
        self._dispatch(job, run)

    def _dispatch(self, job: Job, run: StepRun, released: bool = False) -> None:
        """Send the next attempt of a step to its queue, with a reply deadline if it has one.

        A step with `concurrency` waits for a slot first, unless `released` (it has one).
        """
        if run.spec.concurrency is not None and not released:
            self._hold(job, run)
            return
        run.status = StepStatus.RUNNING
        run.attempt += 1
        run.dispatched_at = self.at
        self.commands.append(
            Dispatch(
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
                meta=self._job_meta(job),
                partition=job.partition,
            )
        )
        timeout_s = job.workflow.policy(job.flow_of(run.name), run.name).timeout_s
        if timeout_s is not None:
            key = timers.step_timeout(job.id, run.name, run.attempt)
            self._start_timer(key, self.at + timeout_s)

    def _fan_out(self, job: Job, run: StepRun, data: dict[str, Any]) -> None:
        task = job.workflow.task_by_name[run.spec.task or ""]
        try:
            items = item_list(task, run.name, data)
            ids = child_ids(job.id, run.name, items)
        except FanOutError as exc:
            self._fail_step(job, run, str(exc))
            return
        taken = next((i for i, cid in enumerate(ids) if cid in self.state.jobs), None)
        if taken is not None:
            message = f"task step '{run.name}': element {taken} has id {ids[taken]}, already a job"
            self._fail_step(job, run, message)
            return
        # Decided before any child starts, from the input alone: replay decides it the same way.
        limit = self.state.max_fanout_bytes
        if (problem := copies_problem(task, run.name, data, len(items), limit)) is not None:
            self._fail_step(job, run, problem)
            return
        if task.payload_schema is not None and self._children_rejected(job, run, task, data, items):
            return
        run.children = ids
        if not items:
            self._complete_step(job, run, dict(data))
            return
        run.child_results = [None] * len(ids)
        run.children_left = len(ids)
        run.next_child = 0
        self._start_children(job, run, task)

    def _start_children(self, job: Job, run: StepRun, task: Task) -> None:
        """Start children in element order until `max_in_flight` of them run (or none is left)."""
        assert run.children is not None and run.input is not None  # set when the step fanned out
        items = run.input[task.item_list_key]
        running = run.next_child - (len(run.children) - run.children_left)
        trace: tuple[str, str | None] | None = None  # hashed once, and only if a child starts
        while run.next_child < len(run.children) and running < task.max_in_flight:
            index = run.next_child
            child_id = run.children[index]
            if child_id in self.state.jobs:
                self._fail_step(
                    job,
                    run,
                    f"task step '{run.name}': element {index} has id {child_id}, already a job",
                )
                return
            payload = child_payload(task, run.input, items[index])
            if trace is None:
                # In their parent's trace; their spans hang from the task step's span.
                trace = (job.trace_id, step_span_id(job.id, run.name, run.attempt))
            link = ParentLink(job.id, run.name, index)
            self._create_job(job.workflow, task, child_id, payload, link, trace)
            run.next_child += 1
            running += 1

    def _complete_step(
        self,
        job: Job,
        run: StepRun,
        output: dict[str, Any],
        status: StepStatus = StepStatus.COMPLETED,
    ) -> None:
        """The step is done (completed, skipped or recovered): its dependents may go on."""
        if run.spec.concurrency is not None:
            self._gate_release(job, run)
        if run.recovers is not None:
            self._fallback_done(job, run, output)  # a fallback: its output goes to its step
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
                self._end_branch(job)
            return
        if job.done_order is not None:
            job.done_order.append(run.name)
        job.steps_left -= 1
        if job.steps_left == 0:
            job.status = JobStatus.COMPLETED
            job.result = _merge(job.steps[name].output for name in job.flow.terminals)
            job.finished_at = self.at
            self._cancel_timer(timers.job_timeout(job.id))
            self._settle(job)

    # -- children ----------------------------------------------------------------------

    def _child_finished(self, child: Job) -> None:
        """A child job settled: O(1) bookkeeping on its parent's task step."""
        assert child.parent is not None  # only children are reported to a parent
        link = child.parent
        parent = self.state.jobs[link.job_id]
        run = parent.steps[link.step]
        # An on_error/on_cancel task step gathers its children after the job itself has ended.
        if not parent.is_live(run.name) or run.status is not StepStatus.RUNNING:
            return
        assert run.child_results is not None  # set when the step fanned out
        if child.done_order is not None:
            self._keep_child_plan(run, child)
        if child.status is JobStatus.FAILED and not self._tolerate(parent, run, child):
            error = child.error or {}
            message = (
                f"child job {child.id} (element {link.index}) failed at step "
                f"'{error.get('step')}': {error.get('message')}"
            )
            self._fail_step(parent, run, message)
            return
        run.child_results[link.index] = child.result
        run.children_left -= 1
        if child.status is JobStatus.COMPLETED:
            # Its result is all the parent needs; its JobFinished carries its final snapshot.
            del self.state.jobs[child.id]
            root = root_of(self.state, parent)
            self.state.gone[child.id] = root
            self.state.gone_by_root.setdefault(root, []).append(child.id)
        task = parent.workflow.task_by_name[run.spec.task or ""]
        if run.children_left > 0:
            self._start_children(parent, run, task)
        else:
            output = gather(task, run.child_results)
            if run.failed_items:
                output["failed_items"] = sorted(run.failed_items, key=lambda f: f["index"])
            run.child_results = None
            self._complete_step(parent, run, output)

    def _tolerate(self, parent: Job, run: StepRun, child: Job) -> bool:
        """Accept a failed child when the task allows more failures (max_failed_items)."""
        task = parent.workflow.task_by_name[run.spec.task or ""]
        failed = run.failed_items if run.failed_items is not None else []
        if len(failed) >= task.max_failed_items:
            return False
        assert child.parent is not None
        failed.append({"index": child.parent.index, "id": child.id, "error": child.error})
        run.failed_items = failed
        return True
