"""Jobs as plain JSON and back, and dropping finished jobs from memory. Pure.

A finished job's snapshot is kept in the journal, so the state need only hold running jobs:
the API restores a snapshot to show a job that has left memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from workflow_manager.config.models import Workflow
from workflow_manager.engine.childids import ChildIds
from workflow_manager.engine.state import (
    Compensation,
    CompensationRun,
    EngineState,
    ForkedFrom,
    Job,
    JobStatus,
    ParentLink,
    StepRun,
    StepStatus,
)
from workflow_manager.engine.traceids import derived_trace_id

__all__ = ["root_of", "descendants", "forget", "snapshot", "restore", "forked_from_json"]


def root_of(state: EngineState, job: Job) -> str:
    """The id of the top-level job `job` belongs to (itself when it has no parent)."""
    if job.root_id:
        return job.root_id
    while job.parent is not None:  # a job restored from its snapshot does not know it
        parent = state.jobs.get(job.parent.job_id)
        if parent is None:
            return job.parent.job_id
        job = parent
    return job.id


def descendants(state: EngineState, job: Job) -> Iterator[Job]:
    """Every child job of `job` still in the state, and their children, depth first."""
    stack = [job]
    while stack:
        current = stack.pop()
        for run in current.steps.values():
            for child_id in run.children or ():
                child = state.jobs.get(child_id)
                if child is not None:
                    yield child
                    stack.append(child)


def forget(state: EngineState, job: Job) -> int:
    """Drop a finished job and its descendants from the state; returns how many were dropped."""
    doomed = [job, *descendants(state, job)]
    for gone in doomed:
        state.jobs.pop(gone.id, None)
    state.gone.forget(job.id)
    return len(doomed)


def _step(run: StepRun) -> dict[str, Any]:
    data: dict[str, Any] = {"status": str(run.status), "attempt": run.attempt}
    for key in ("output", "error", "started_at", "finished_at", "children", "throttled_until"):
        value = getattr(run, key)
        if value is not None:
            data[key] = value.to_json() if key == "children" else value
    return data


def _children(job_id: str, step: str, saved: dict[str, Any] | list[str] | None) -> ChildIds | None:
    """A task step's child ids as its snapshot keeps them (a list: written before 2026-11-29)."""
    return None if saved is None else ChildIds.from_json(job_id, step, saved)


def snapshot(job: Job) -> dict[str, Any]:
    """A job's lasting facts as JSON-ready data (step inputs are left out: they are derivable)."""
    return {
        "id": job.id,
        "task": None if job.flow is job.workflow else job.flow.name,
        "parent": [job.parent.job_id, job.parent.step, job.parent.index] if job.parent else None,
        "status": str(job.status),
        "submitted_at": job.submitted_at,
        "finished_at": job.finished_at,
        "payload": job.payload,
        "result": job.result,
        "error": job.error,
        "branch": job.branch,
        "steps": {name: _step(run) for name, run in job.steps.items()},
        "trace_id": job.trace_id,
        "trace_parent": job.trace_parent,
        **({"start_at": job.start_at} if job.start_at is not None else {}),
        **({"unique_key": job.unique_key} if job.unique_key is not None else {}),
        "priority": job.priority,
        "meta": job.meta,
        **({"compensation": _compensation(job.compensation)} if job.compensation else {}),
        **({"forked_from": forked_from_json(job.fork)} if job.fork is not None else {}),
    }


def forked_from_json(fork: ForkedFrom) -> dict[str, Any]:
    """What a fork came from, as its snapshot keeps it (and the API shows it)."""
    data: dict[str, Any] = {"job": fork.source, "step": fork.step, "reused": list(fork.reused)}
    if fork.input is not None:
        data["input"] = fork.input
    if fork.children_reused:
        data["children_reused"] = fork.children_reused
    return data


def _restore_fork(data: Mapping[str, Any]) -> ForkedFrom:
    return ForkedFrom(
        data["job"], data["step"], data.get("input"), tuple(data.get("reused", ())),
        children_reused=data.get("children_reused", 0),
    )  # fmt: skip


def _compensation(compensation: Compensation) -> dict[str, Any]:
    runs = []
    for comp in compensation.runs:
        entry: dict[str, Any] = {
            "job": comp.job_id, "task": comp.task, "step": comp.step, "name": comp.name,
            "status": str(comp.status), "attempt": comp.attempt,
        }  # fmt: skip
        for key in ("error", "started_at", "finished_at"):
            if (value := getattr(comp, key)) is not None:
                entry[key] = value
        runs.append(entry)
    return {"reason": compensation.reason, "error": compensation.error, "runs": runs}


def _restore_compensation(data: Mapping[str, Any], workflow: Workflow) -> Compensation:
    """A finished job's compensations, for showing them (their inputs are not kept)."""
    runs = []
    for entry in data["runs"]:
        flow = workflow if entry["task"] is None else workflow.task_by_name[entry["task"]]
        spec = flow.steps[flow.step_index[entry["step"]]].compensate
        assert spec is not None  # a snapshot names only steps with compensate
        runs.append(
            CompensationRun(
                entry["job"], entry["task"], entry["step"], spec,
                workflow.policy(flow, spec.name), {}, {}, _status(entry["status"], False),
                entry["attempt"], entry.get("error"), entry.get("started_at"),
                entry.get("finished_at"),
            )  # fmt: skip
        )
    done = sum(run.status in (StepStatus.COMPLETED, StepStatus.FAILED) for run in runs)
    return Compensation(runs, data["reason"], data["error"], "", {}, done)


def _status(saved: str, waits: bool) -> StepStatus:
    """A saved step status; "waiting" meant "not reached yet" before steps could wait for a
    signal (`waits`: a `wait: true` step), so a snapshot from then reads as pending."""
    if saved == StepStatus.WAITING and not waits:
        return StepStatus.PENDING
    return StepStatus(saved)


def restore(data: Mapping[str, Any], workflow: Workflow) -> Job:
    """Rebuild a (finished) job from its snapshot and the definition it ran."""
    flow = workflow if data["task"] is None else workflow.task_by_name[data["task"]]
    branch = data.get("branch")
    specs = [*flow.steps, *(workflow.branches[branch].steps if branch else ())]
    # The fallbacks that ran: a fallback's run answers the step it belongs to.
    recovers = {
        fallback.name: step.name
        for step in flow.steps
        if (fallback := step.fallback_step) is not None and fallback.name in data["steps"]
    }
    specs += [
        fallback
        for step in flow.steps
        if (fallback := step.fallback_step) is not None and fallback.name in recovers
    ]
    steps: dict[str, StepRun] = {}
    for spec in specs:
        saved = data["steps"].get(spec.name, {})
        steps[spec.name] = StepRun(
            spec=spec,
            waiting_on=0,
            status=_status(saved.get("status", "pending"), spec.wait),
            attempt=saved.get("attempt", 0),
            output=saved.get("output"),
            error=saved.get("error"),
            started_at=saved.get("started_at"),
            finished_at=saved.get("finished_at"),
            children=_children(data["id"], spec.name, saved.get("children")),
            throttled_until=saved.get("throttled_until"),
            recovers=recovers.get(spec.name),
        )
    left = sum(
        not run.status.is_done
        for run in steps.values()
        if run.name in flow.step_index
    )
    parent = ParentLink(*data["parent"]) if data.get("parent") else None
    return Job(
        id=data["id"],
        workflow=workflow,
        flow=flow,
        payload=data["payload"],
        submitted_at=data["submitted_at"],
        steps=steps,
        steps_left=left,
        parent=parent,
        status=JobStatus(data["status"]),
        result=data.get("result"),
        error=data.get("error"),
        finished_at=data.get("finished_at"),
        branch=branch,
        # A snapshot from before jobs had traces: the trace a replay of it would give.
        trace_id=data.get("trace_id") or derived_trace_id(data["id"]),
        trace_parent=data.get("trace_parent"),
        start_at=data.get("start_at"),
        unique_key=data.get("unique_key"),
        priority=data.get("priority", 0),
        meta=data.get("meta"),
        compensation=(
            _restore_compensation(data["compensation"], workflow)
            if data.get("compensation")
            else None
        ),
        fork=_restore_fork(data["forked_from"]) if data.get("forked_from") else None,
    )
