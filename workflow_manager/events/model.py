"""Run events: what changed in a run, as `GET /api/events` and the broker exchange tell it. Pure.

Each committed event's commands become zero or more `RunEvent`s, in the engine's order:

    JobScheduled           job.scheduled                    status scheduled, start_at
    JobDebounced           job.debounced                    a trigger joined the job's debounce
                                                            window: reason names it; start_at
                                                            (trailing) when the job starts
    JobQueued              job.queued                       status queued (a concurrency limit);
                                                            waiting_for: the first full limit
    StepWaiting            step.waiting                     status waiting
    StepThrottled          step.throttled                   status throttled (a rate limit);
                                                            start_at: when it may go
    JobThrottled           job.throttled                    status queued (its workflow's rate);
                                                            start_at: when it may start
    StepSignalled          step.signalled                   status completed, or kept (early)
    JobStarted             job.started                      status running
    JobFinished            job.completed|failed|cancelled   status as the job ended
    Dispatch               step.dispatched                  status running, attempt
    StepFinished           step.completed|retrying|failed   status, attempt, reason on failure;
                                                            a join or reduce task step's totals
                                                            once it ended (join, reduce)
                           step.skipped                     status skipped (its `when` was false)
                           step.recovered                   status recovered (by its fallback)
    JobCompensating        job.compensating                 status compensating, reason
    JobPauseSet            job.paused|resumed               status paused, or running again
    JobForked              job.forked                       the fork; source, step, reused
    BulkProgress           bulk.started|progress|finished   job: the bulk's id; done, total
    StepCompensation       step.compensating|compensated    the step being undone; status
                           step.compensation_failed         failed, reason: the message
    SchedulePauseSet       schedule.paused|resumed          job: `<workflow>/<schedule>`;
                                                            schedule, status paused or running
A compensation's own requests and attempts are steps too (step.dispatched, step.completed...),
named by the compensation's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workflow_manager.engine import (
    BulkProgress,
    Command,
    Dispatch,
    JobCompensating,
    JobDebounced,
    JobFinished,
    JobForked,
    JobPauseSet,
    JobQueued,
    JobScheduled,
    JobStarted,
    JobThrottled,
    SchedulePauseSet,
    StepCompensation,
    StepFinished,
    StepSignalled,
    StepThrottled,
    StepWaiting,
)

__all__ = ["RunEvent", "EVENT_TYPES", "run_events"]

EVENT_TYPES = (
    "job.scheduled",
    "job.debounced",
    "job.queued",
    "job.throttled",
    "job.started",
    "job.completed",
    "job.failed",
    "job.cancelled",
    "step.dispatched",
    "step.completed",
    "step.failed",
    "step.retrying",
    "step.skipped",
    "step.recovered",
    "job.compensating",
    "step.compensating",
    "step.compensated",
    "step.compensation_failed",
    "step.waiting",
    "step.signalled",
    "step.throttled",
    "job.paused",
    "job.resumed",
    "job.forked",
    "bulk.started",
    "bulk.progress",
    "bulk.finished",
    "schedule.paused",
    "schedule.resumed",
)
_LATER_KEYS = ("schedule", "waiting_for", "join", "reduce")  # in this order, before `at`
_STEP_TYPES = {"completed": "step.completed", "retrying": "step.retrying", "failed": "step.failed"}
_COMPENSATION_TYPES = {
    "compensating": "step.compensating",
    "compensated": "step.compensated",
    "failed": "step.compensation_failed",
}


@dataclass(slots=True)
class RunEvent:
    """One change in a run. `workflow` is the top-level workflow's name (children's too);
    `parent` is set for a child job's own job events. `seq` and `id` are the hub's numbering."""

    type: str
    job: str
    root: str
    workflow: str
    at: float
    step: str | None = None
    attempt: int | None = None
    status: str | None = None
    reason: str | None = None
    parent: str | None = None
    start_at: float | None = None
    forked_from: str | None = None  # job.forked: the source job
    done: int | None = None  # bulk.*: the jobs acted on so far, of `total`
    total: int | None = None
    schedule: str | None = None  # schedule.*: the schedule's name (`job` is `<workflow>/<name>`)
    waiting_for: dict[str, Any] | None = None  # job.queued: the limit, as GET /api/job shows it
    # A task step's step.completed/failed: its join's totals (policy, needed, succeeded,
    # failed, left, then) and its reduction's (batches, reduced), when the engine gives them.
    join: dict[str, Any] | None = None
    reduce: dict[str, Any] | None = None
    seq: int = 0
    id: str = ""

    def __repr__(self) -> str:
        where = f" step={self.step}" if self.step else ""
        return f"<RunEvent {self.id} {self.type} job={self.job}{where}>"

    @property
    def is_step_event(self) -> bool:
        """True for step.* events (not job.*, bulk.* nor schedule.*)."""
        return self.type.startswith("step.")

    def to_json(self) -> dict[str, Any]:
        """The event as the stream and the exchange send it; keys that do not apply are left out."""
        body: dict[str, Any] = {
            "type": self.type,
            "job": self.job,
            "root": self.root,
            "workflow": self.workflow,
        }
        if self.parent is not None:
            body["parent"] = self.parent
        if self.step is not None:
            body["step"] = self.step
        if self.attempt is not None:
            body["attempt"] = self.attempt
        if self.status is not None:
            body["status"] = self.status
        if self.reason is not None:
            body["reason"] = self.reason
        if self.start_at is not None:
            body["start_at"] = self.start_at
        if self.forked_from is not None:
            body["forked_from"] = self.forked_from
        if self.total is not None:
            body["done"], body["total"] = self.done, self.total
        for key in _LATER_KEYS:
            if (value := getattr(self, key)) is not None:
                body[key] = value
        body["at"] = self.at
        return body


def _event_time(commands: Sequence[Command], default: float) -> float:
    """When the event happened: the first command that says (a Dispatch alone does not)."""
    for command in commands:
        at = getattr(command, "at", None)
        if isinstance(at, float | int):
            return float(at)
    return default


def run_events(commands: Sequence[Command], now: float) -> list[RunEvent]:
    """The run events of one committed event's commands, in order; `now` dates a bare Dispatch."""
    out: list[RunEvent] = []
    at: float | None = None
    for command in commands:
        if isinstance(command, Dispatch):
            if at is None:
                at = _event_time(commands, now)
            out.append(
                RunEvent(
                    "step.dispatched",
                    command.job_id,
                    command.root_id,
                    command.workflow,
                    at,
                    command.step,
                    command.attempt,
                    "running",
                )  # fmt: skip
            )
        elif isinstance(command, JobDebounced):
            out.append(_debounced_event(command))
        elif isinstance(command, BulkProgress | JobForked):
            out.append(_bulk_event(command) if isinstance(command, BulkProgress) else
                       _forked_event(command))  # fmt: skip
        else:
            event = _run_event(command)
            if event is not None:
                out.append(event)
    return out


def _forked_event(command: JobForked) -> RunEvent:
    return RunEvent(
        "job.forked", command.job_id, command.job_id, command.workflow, command.at,
        step=command.step, forked_from=command.source,
    )  # fmt: skip


def _bulk_event(command: BulkProgress) -> RunEvent:
    """A bulk action's progress: `job` and `root` are its id, `reason` its action."""
    kind = "finished" if command.finished else "progress" if command.count else "started"
    return RunEvent(
        f"bulk.{kind}", command.bulk_id, command.bulk_id, "", command.at,
        status="finished" if command.finished else "running", reason=command.action,
        done=command.done, total=command.total,
    )  # fmt: skip


def _step_wait_event(command: StepWaiting | StepThrottled | StepSignalled) -> RunEvent:
    """A step that waits (for its signal, or its turn under a rate limit), or was signalled."""
    match command:
        case StepWaiting():
            return RunEvent(
                "step.waiting", command.job_id, command.root_id, command.workflow, command.at,
                command.step, status="waiting",
            )  # fmt: skip
        case StepThrottled():
            return RunEvent(
                "step.throttled", command.job_id, command.root_id, command.workflow, command.at,
                command.step, status="throttled", start_at=command.until,
            )  # fmt: skip
    return RunEvent(
        "step.signalled", command.job_id, command.root_id, command.workflow, command.at,
        command.step, status="kept" if command.kept else "completed",
    )  # fmt: skip


def _run_event(command: Command) -> RunEvent | None:
    """The run event of one command other than a Dispatch (None: the command tells none)."""
    # `match` on the closed union of command classes, so the checker narrows each arm.
    match command:
        case StepFinished():
            return _step_finished_event(command)
        case JobStarted():
            return RunEvent(
                "job.started",
                command.job_id,
                command.root_id,
                command.workflow,
                command.at,
                status="running",
                parent=command.parent_id,
            )  # fmt: skip
        case JobScheduled():
            return RunEvent(
                "job.scheduled",
                command.job_id,
                command.job_id,
                command.workflow,
                command.at,
                status="scheduled",
                start_at=command.start_at,
            )  # fmt: skip
        case StepWaiting() | StepThrottled() | StepSignalled():
            return _step_wait_event(command)
        case JobThrottled():
            return RunEvent(
                "job.throttled", command.job_id, command.job_id, command.workflow, command.at,
                status="queued", start_at=command.until,
            )  # fmt: skip
        case JobCompensating():
            return RunEvent(
                "job.compensating", command.job_id, command.root_id, command.workflow,
                command.at, status="compensating", reason=command.reason,
            )  # fmt: skip
        case StepCompensation():
            return RunEvent(
                _COMPENSATION_TYPES[command.outcome], command.job_id, command.root_id,
                command.workflow, command.at, command.step, status=command.outcome,
                reason=command.message,
            )  # fmt: skip
        case JobQueued():
            return RunEvent(
                "job.queued",
                command.job_id,
                command.job_id,
                command.workflow,
                command.at,
                status="queued",
                waiting_for=command.waiting_for,
            )
        case JobFinished():
            status = str(command.status)
            return RunEvent(
                f"job.{status}",
                command.job_id,
                command.root_id,
                command.workflow,
                command.at,
                status=status,
                parent=command.parent_id,
            )  # fmt: skip
        case JobPauseSet():
            return RunEvent(
                "job.paused" if command.paused else "job.resumed", command.job_id,
                command.root_id, command.workflow, command.at,
                status="paused" if command.paused else "running",
            )  # fmt: skip
        case SchedulePauseSet():
            return _schedule_event(command)
    return None


def _step_finished_event(command: StepFinished) -> RunEvent:
    """A step (attempt) ended; a join or reduce task step's totals ride along when the engine
    gives them (`fan_in`: counts only, never a result or a reference's value)."""
    totals: dict[str, Any] = command.fan_in or {}
    return RunEvent(
        _STEP_TYPES.get(command.outcome, f"step.{command.outcome}"),
        command.job_id,
        command.root_id,
        command.workflow,
        command.at,
        command.step,
        command.attempt,
        command.outcome,
        command.reason if command.outcome != "completed" else None,
        join=totals.get("join"),
        reduce=totals.get("reduce"),
    )  # fmt: skip


def _schedule_event(command: SchedulePauseSet) -> RunEvent:
    """A schedule paused or resumed: `job` and `root` are `<workflow>/<schedule>` (no job)."""
    subject = f"{command.workflow}/{command.schedule}"
    return RunEvent(
        "schedule.paused" if command.paused else "schedule.resumed", subject, subject,
        command.workflow, command.at, status="paused" if command.paused else "running",
        schedule=command.schedule,
    )  # fmt: skip


def _debounced_event(command: JobDebounced) -> RunEvent:
    """A trigger joined job `existing`'s debounce window: `reason` names the trigger and key;
    a trailing window's `start_at` is when the job starts."""
    trailing = command.mode == "trailing"
    return RunEvent(
        "job.debounced", command.existing, command.existing, command.workflow, command.at,
        status="scheduled" if trailing else None,
        reason=f"trigger {command.job_id} with debounce key {command.key} ({command.mode})",
        start_at=command.ends_at if trailing else None,
    )  # fmt: skip
