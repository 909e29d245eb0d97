"""Engine state as API response bodies. Pure: the current time comes in as `now`.

Keys that do not apply (a job's `result` before it completes, a step's `tasks` before it
fans out) are left out rather than set to null.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workflow_manager.api.compensations import compensation_view
from workflow_manager.config.models import Workflow
from workflow_manager.engine import Job, JobStatus, StepRun, StepStatus
from workflow_manager.engine.snapshot import forked_from_json
from workflow_manager.fanin import join_view, reduce_view
from workflow_manager.journal import EventKind, EventRow
from workflow_manager.textline import iso_utc

__all__ = [
    "START",
    "END",
    "iso_utc",
    "workflow_summaries",
    "running_job_ids",
    "job_detail",
    "step_entry",
    "shown_status",
    "progress",
]

START = "__start__"
END = "__end__"
_COMPENSATION = (StepStatus.COMPENSATING, StepStatus.COMPENSATED)


def _seconds(start: float, end: float) -> float:
    return round(max(0.0, end - start), 3)


def workflow_summaries(
    workflows: Mapping[str, Workflow], jobs: Iterable[Job]
) -> list[dict[str, Any]]:
    """One entry per workflow, or per vhost of a workflow that lists vhosts.

    Jobs do not record a vhost, so each of a workflow's vhost entries carries its total count.
    """
    running = Counter(j.workflow.name for j in jobs if j.parent is None and j.is_running)
    return [
        {"vhost": vhost, "name": name, "job_count": running[name]}
        for name, workflow in workflows.items()
        for vhost in (workflow.vhosts or ("",))
    ]


def running_job_ids(jobs: Iterable[Job]) -> dict[str, Any]:
    """Ids of every running job, child jobs included, in submission order."""
    return {"jobs": [job.id for job in jobs if job.is_running]}


def shown_status(job: Job) -> str:
    """A job's status as the API shows it: `paused` for a running job that is paused."""
    if job.status is JobStatus.RUNNING and getattr(job, "paused", False):
        return "paused"
    return str(job.status)


def step_entry(run: StepRun, job: Job, now: float) -> dict[str, Any]:
    """A started step as a list entry; its `message` is its output, or its error if it failed.

    A step still running in a job that has ended was in flight when the job ended: its
    clock stops at the job's end, since any late reply to it will be dropped.
    """
    start = run.started_at if run.started_at is not None else job.submitted_at
    end = next(t for t in (run.finished_at, job.finished_at, now) if t is not None)
    entry: dict[str, Any] = {
        "name": run.name,
        "startTime": iso_utc(start),
        "elapsed": _seconds(start, end),
    }
    if run.children is not None:
        entry.update(_tasks(run, run.children))
    if run.status.is_done:
        entry["message"] = run.output
    elif run.status is StepStatus.FAILED:
        entry["message"] = run.error
    if run.attempt > 1:
        entry["attempt"] = run.attempt
    if run.status is StepStatus.RETRYING:
        entry["retrying"] = True  # waiting out the backoff; `lastError` says why
        entry["lastError"] = run.error
    if run.name not in job.flow.step_index:
        entry["branch"] = job.branch
    if run.status is StepStatus.SKIPPED:
        entry["skipped"] = True
    elif run.status is StepStatus.RECOVERED:
        entry["recovered"] = True
    elif run.status in _COMPENSATION:
        entry["compensation"] = str(run.status)
    return entry


def _tasks(run: StepRun, children: Sequence[str]) -> dict[str, Any]:
    """A task step's children, its progress while it runs, its join's and its reduction's."""
    entry: dict[str, Any] = {"tasks": list(children)}
    if run.status is StepStatus.RUNNING:
        entry["tasks_total"] = len(children)
        entry["tasks_done"] = len(children) - run.children_left
        if run.spec.join is not None and run.spec.join.policy != "all":
            entry["tasks_needed"] = run.spec.join.needed(len(children))
    if (join := join_view(run)) is not None:
        entry["join"] = join
    if (reduction := reduce_view(run)) is not None:
        entry["reduce"] = reduction
    return entry


def _pseudo_step(name: str, at: float, message: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name, "startTime": iso_utc(at), "elapsed": 0.0, "message": message}


def _children_done(run: StepRun) -> int:
    total = len(run.children or ())
    return total if run.status.is_done else total - run.children_left


def progress(job: Job) -> dict[str, int]:
    """Completed steps out of all, and finished children out of all fanned out so far."""
    runs = list(job.steps.values())
    fanned = [run for run in runs if run.children]
    return {
        "steps_done": sum(run.status.is_done for run in runs),
        "steps_total": len(runs),
        "children_done": sum(_children_done(run) for run in fanned),
        "children_total": sum(len(run.children or ()) for run in fanned),
    }


def job_detail(job: Job, now: float) -> dict[str, Any]:
    """A job's steps grouped by status in declaration order, framed by `__start__`/`__end__`."""
    lists: dict[StepStatus, list[dict[str, Any]]] = {
        StepStatus.RUNNING: [],
        StepStatus.COMPLETED: [_pseudo_step(START, job.submitted_at, job.payload)],
        StepStatus.FAILED: [],
        StepStatus.WAITING: [],
    }
    for run in job.steps.values():
        status = StepStatus.RUNNING if run.status is StepStatus.RETRYING else run.status
        status = StepStatus.COMPLETED if status.is_done else status
        if status in lists:
            lists[status].append(step_entry(run, job, now))
    if job.status is JobStatus.COMPLETED and job.finished_at is not None:
        lists[StepStatus.COMPLETED].append(_pseudo_step(END, job.finished_at, job.result))
    detail: dict[str, Any] = {"uuid": job.id, "workflow": job.workflow.name}
    if job.parent is not None:
        detail["task"] = job.flow.name
        detail["parent"] = job.parent.job_id
    detail["status"] = shown_status(job)
    if job.status is JobStatus.QUEUED and job.queued_at is not None:
        detail["queued_at"] = iso_utc(job.queued_at)
    if job.start_at is not None:
        detail["start_at"] = iso_utc(job.start_at)
    detail["running"] = lists[StepStatus.RUNNING]
    detail["completed"] = lists[StepStatus.COMPLETED]
    detail["failed"] = lists[StepStatus.FAILED]
    if lists[StepStatus.WAITING]:
        detail["waiting"] = lists[StepStatus.WAITING]
    detail["progress"] = progress(job)
    detail["trace_id"] = job.trace_id
    detail["priority"] = job.priority
    if job.meta is not None:
        detail["meta"] = job.meta
    if job.result is not None:
        detail["result"] = job.result
    if job.error is not None:
        detail["error"] = job.error
    _add_history(detail, job)
    return detail


def _add_history(detail: dict[str, Any], job: Job) -> None:
    """What a job undid (its compensations) and what it was forked from, where it has them."""
    if (compensations := compensation_view(job)) is not None:
        detail["compensations"] = compensations
    if job.fork is not None:
        detail["forked_from"] = forked_from_json(job.fork)


def fork_entries(rows: Iterable[EventRow]) -> list[dict[str, Any]]:
    """The forks of a job, from the rows filed under `forks:<id>` (oldest first)."""
    return [
        {"id": row.meta["job"], "step": row.meta["step"], "at": iso_utc(row.at)}
        for row in rows
        if row.kind == EventKind.FORKED
    ]
