"""The engine: `apply(state, event) -> (state, commands)`, with no I/O, clock or randomness.

Work inside one event runs through a FIFO of ready steps, so steps that become ready
together start in declaration order and the commands come out in a deterministic order.
"""

from __future__ import annotations

import difflib
import uuid
from collections import deque
from collections.abc import Iterable
from typing import Any

from manager.config.models import Flow, Workflow
from manager.engine.commands import (
    Command,
    Dispatch,
    Ignored,
    JobFinished,
    JobRejected,
    JobStarted,
    NotifyOutcome,
)
from manager.engine.events import Event, JobSubmitted, StepReplied
from manager.engine.fanout import (
    FanOutError,
    child_ids,
    child_payload,
    gather,
    item_list,
    json_type,
)
from manager.engine.replies import ReplyError, decode_output, split_correlation_id
from manager.engine.state import EngineState, Job, JobStatus, ParentLink, StepRun, StepStatus

__all__ = ["apply", "replay", "outcome_body"]


def apply(state: EngineState, event: Event) -> tuple[EngineState, list[Command]]:
    """Apply one event: update `state` in place and return it with the commands to carry out."""
    if not isinstance(event, JobSubmitted | StepReplied):
        raise TypeError(f"not an engine event: {event!r}")
    transition = _Transition(state, event.at)
    if isinstance(event, JobSubmitted):
        transition.submit(event)
    else:
        transition.reply(event)
    transition.drain()
    return state, transition.commands


def replay(state: EngineState, events: Iterable[Event]) -> EngineState:
    """Rebuild state by applying `events` in order; the commands were carried out already."""
    for event in events:
        apply(state, event)
    return state


def outcome_body(job: Job) -> dict[str, Any]:
    """What a trigger's `reply_to` receives when `job` ends: its result, or its error."""
    if job.status is JobStatus.COMPLETED:
        return job.result or {}
    return {"error": job.error}


def _canonical_uuid(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _merge(outputs: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Merge objects so the first one holding a key wins."""
    merged: dict[str, Any] = {}
    for output in outputs:
        for key, value in (output or {}).items():
            merged.setdefault(key, value)
    return merged


class _Transition:
    """The work of one event: state changes are made here, commands collected in order."""

    def __init__(self, state: EngineState, at: float) -> None:
        self.state = state
        self.at = at
        self.commands: list[Command] = []
        self.ready: deque[tuple[Job, StepRun]] = deque()

    # -- submissions -------------------------------------------------------------------

    def submit(self, event: JobSubmitted) -> None:
        job_id = _canonical_uuid(event.job_id)
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
            self._resubmitted(existing, event.reply_to)
            return
        job = self._create_job(workflow, workflow, job_id, event.payload, parent=None)
        if event.reply_to:
            job.reply_to.append(event.reply_to)

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
        if job.is_running:
            if reply_to not in job.reply_to:
                job.reply_to.append(reply_to)
        else:
            self.commands.append(NotifyOutcome(reply_to, job.id, job.status, outcome_body(job)))

    def _create_job(
        self,
        workflow: Workflow,
        flow: Flow,
        job_id: str,
        payload: dict[str, Any],
        parent: ParentLink | None,
    ) -> Job:
        steps = {s.name: StepRun(spec=s, waiting_on=len(set(s.depends))) for s in flow.steps}
        job = Job(job_id, workflow, flow, payload, self.at, steps, len(steps), parent)
        self.state.jobs[job_id] = job
        parent_id = parent.job_id if parent else None
        self.commands.append(JobStarted(job_id, workflow.name, parent_id, self.at))
        self.ready.extend((job, run) for run in steps.values() if run.waiting_on == 0)
        return job

    # -- replies -----------------------------------------------------------------------

    def reply(self, event: StepReplied) -> None:
        target = self._reply_target(event)
        if target is None:
            return
        job, run = target
        if event.error is not None:
            self._fail_step(job, run, event.error or "worker reported an error")
            return
        try:
            output = decode_output(event.body)
        except ReplyError as exc:
            self._fail_step(job, run, str(exc))
            return
        self._complete_step(job, run, output)

    def _reply_target(self, event: StepReplied) -> tuple[Job, StepRun] | None:
        """The running step a reply answers, or None after reporting why it answers none."""
        cid = event.correlation_id
        parts = split_correlation_id(cid)
        if parts is None:
            return self._ignore(cid, "malformed correlation id; expected '<job-uuid>:<step-name>'")
        job_id, step = parts
        job = self.state.jobs.get(job_id) or self.state.jobs.get(_canonical_uuid(job_id) or "")
        if job is None:
            return self._ignore(cid, f"no job {job_id}")
        if not job.is_running:
            return self._ignore(cid, f"job {job_id} is already {job.status}; late reply dropped")
        run = job.steps.get(step)
        if run is None:
            return self._ignore(cid, f"job {job_id} ({job.flow.name}) has no step '{step}'")
        if run.spec.task is not None:
            return self._ignore(cid, f"step '{step}' is a task step; no worker answers it")
        if run.status is not StepStatus.RUNNING:
            return self._ignore(cid, f"step '{step}' is {run.status}; duplicate or late reply")
        if event.attempt is not None and event.attempt != run.attempt:
            return self._ignore(
                cid, f"reply is for attempt {event.attempt}, but step '{step}' is on {run.attempt}"
            )
        return job, run

    def _ignore(self, subject: str, reason: str) -> None:
        self.commands.append(Ignored(subject, reason))
        return None

    # -- steps -------------------------------------------------------------------------

    def drain(self) -> None:
        """Start every ready step, including those that become ready while doing so."""
        while self.ready:
            job, run = self.ready.popleft()
            if job.is_running and run.status is StepStatus.WAITING:
                self._start_step(job, run)

    def _start_step(self, job: Job, run: StepRun) -> None:
        depends = run.spec.depends
        if not depends:
            data = job.payload
        elif len(depends) == 1:
            data = job.steps[depends[0]].output or {}
        else:
            data = _merge(job.steps[name].output for name in depends)
        run.input = data
        run.status = StepStatus.RUNNING
        run.started_at = self.at
        if run.spec.task is not None:
            self._fan_out(job, run, data)
            return
        run.attempt += 1
        self.commands.append(
            Dispatch(
                job_id=job.id,
                step=run.name,
                queue=run.spec.queue_name,
                correlation_id=f"{job.id}:{run.name}",
                body=data,
                workflow=job.workflow.name,
                attempt=run.attempt,
            )
        )

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
        run.children = ids
        if not items:
            self._complete_step(job, run, dict(data))
            return
        run.child_results = [None] * len(ids)
        run.children_left = len(ids)
        for index, (child_id, element) in enumerate(zip(ids, items, strict=True)):
            payload = child_payload(task, data, element)
            link = ParentLink(job.id, run.name, index)
            self._create_job(job.workflow, task, child_id, payload, link)

    def _complete_step(self, job: Job, run: StepRun, output: dict[str, Any]) -> None:
        run.status = StepStatus.COMPLETED
        run.output = output
        run.finished_at = self.at
        job.steps_left -= 1
        for name in job.flow.dependents[run.name]:
            dependent = job.steps[name]
            dependent.waiting_on -= 1
            if dependent.waiting_on == 0:
                self.ready.append((job, dependent))
        if job.steps_left == 0:
            result = _merge(job.steps[name].output for name in job.flow.terminals)
            self._finish_job(job, JobStatus.COMPLETED, result=result)

    def _fail_step(self, job: Job, run: StepRun, message: str) -> None:
        run.status = StepStatus.FAILED
        run.error = message
        run.finished_at = self.at
        self._finish_job(job, JobStatus.FAILED, error={"step": run.name, "message": message})

    # -- jobs --------------------------------------------------------------------------

    def _finish_job(
        self,
        job: Job,
        status: JobStatus,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        job.status = status
        job.result = result
        job.error = error
        job.finished_at = self.at
        parent_id = job.parent.job_id if job.parent else None
        self.commands.append(
            JobFinished(job.id, job.workflow.name, status, result, error, parent_id, self.at)
        )
        for reply_to in job.reply_to:
            self.commands.append(NotifyOutcome(reply_to, job.id, status, outcome_body(job)))
        if status is not JobStatus.COMPLETED:
            self._cancel_children(job)
        if job.parent is not None and status is not JobStatus.CANCELLED:
            self._child_finished(job, job.parent)

    def _cancel_children(self, job: Job) -> None:
        """A job that stops early takes its running children with it: no more dispatches."""
        for run in job.steps.values():
            for child_id in run.children or ():
                child = self.state.jobs[child_id]
                if child.is_running:
                    message = f"parent job {job.id} {job.status}"
                    self._finish_job(
                        child, JobStatus.CANCELLED, error={"step": None, "message": message}
                    )

    def _child_finished(self, child: Job, link: ParentLink) -> None:
        parent = self.state.jobs[link.job_id]
        run = parent.steps[link.step]
        if not parent.is_running or run.status is not StepStatus.RUNNING:
            return
        if child.status is JobStatus.FAILED:
            error = child.error or {}
            message = (
                f"child job {child.id} (element {link.index}) failed at step "
                f"'{error.get('step')}': {error.get('message')}"
            )
            self._fail_step(parent, run, message)
            return
        assert run.child_results is not None  # set when the step fanned out
        run.child_results[link.index] = child.result
        run.children_left -= 1
        if run.children_left == 0:
            task = parent.workflow.task_by_name[run.spec.task or ""]
            output = gather(task, run.child_results)
            run.child_results = None
            self._complete_step(parent, run, output)
