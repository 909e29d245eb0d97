"""Bodies of the browsing routes: a job's children page, the latest jobs, the overview and a
workflow's definition. Pure: engine jobs, journal rows and the time come in.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from workflow_manager.api.jobview import CHILD_STATUSES, child_status, step_route
from workflow_manager.api.views import shown_status
from workflow_manager.config.models import Flow, Step, Workflow
from workflow_manager.engine import Job, JobStatus, StepRun
from workflow_manager.journal.history import ChildRow, JobListing
from workflow_manager.textline import iso_utc

__all__ = ["ChildFilter", "children_page", "job_listing", "overview", "definition"]


def _seconds(start: float, end: float) -> float:
    return round(max(0.0, end - start), 3)


@dataclass(frozen=True, slots=True)
class ChildFilter:
    """Which children a page shows: of one task step or all, of one status or all, and where."""

    step: str | None
    status: str | None
    offset: int
    limit: int


def _task_runs(job: Job, step: str | None) -> Iterator[StepRun]:
    for spec in job.flow.steps:
        run = job.steps.get(spec.name)
        if spec.task and run is not None and run.children and step in (None, spec.name):
            yield run


def _child(
    child_id: str, run: StepRun, index: int, status: str, row: ChildRow | None,
    live: Job | None, now: float,
) -> dict[str, Any]:  # fmt: skip
    entry: dict[str, Any] = {
        "uuid": child_id, "task": run.spec.task, "step": run.name, "index": index,
        "status": status,
    }  # fmt: skip
    started = live.submitted_at if live is not None else row.submitted_at if row else None
    if started is not None:
        entry["submitted_at"] = iso_utc(started)
        finished = row.finished_at if row is not None and live is None else None
        if finished is not None:
            entry["finished_at"] = iso_utc(finished)
        entry["elapsed"] = _seconds(started, finished or now)
    if row is not None and row.error is not None:
        entry["error"] = row.error
    return entry


def children_page(
    job: Job,
    wanted: ChildFilter,
    live: Mapping[str, Job],
    rows: Mapping[str, ChildRow],
    now: float,
) -> dict[str, Any]:
    """One page of a job's children in element order, with the counts of every status."""
    ended = {child_id: row.status for child_id, row in rows.items()}
    counts: Counter[str] = Counter()
    page: list[dict[str, Any]] = []
    matching = 0
    for run in _task_runs(job, wanted.step):
        started = run.next_child if job.id in live else 0
        for index, child_id in enumerate(run.children or ()):
            status = child_status(child_id, index, started, live, ended)
            counts[status] += 1
            if wanted.status not in (None, status):
                continue
            if wanted.offset <= matching < wanted.offset + wanted.limit:
                page.append(
                    _child(child_id, run, index, status, rows.get(child_id),
                           live.get(child_id), now)
                )  # fmt: skip
            matching += 1
    return {
        "total": matching,
        "offset": wanted.offset,
        "limit": wanted.limit,
        "counts": {status: counts[status] for status in CHILD_STATUSES},
        "children": page,
    }


def job_listing(listing: JobListing, live: Job | None, now: float) -> dict[str, Any]:
    """A top-level job as a row of a list; a job still in memory shows its live status."""
    status = shown_status(live) if live is not None else listing.status
    finished = live.finished_at if live is not None else listing.finished_at
    entry: dict[str, Any] = {
        "uuid": listing.id,
        "workflow": listing.workflow,
        "status": status,
        "submitted_at": iso_utc(listing.submitted_at),
    }
    if live is not None and live.start_at is not None:
        entry["start_at"] = iso_utc(live.start_at)
    if finished is not None:
        entry["finished_at"] = iso_utc(finished)
    entry["elapsed"] = _seconds(listing.submitted_at, finished or now)
    return entry


def overview(
    workflows: Iterable[str],
    jobs: Iterable[Job],
    finished: Iterable[tuple[str, str, float]],
    since: float,
) -> dict[str, Any]:
    """Per workflow: top-level jobs running now, jobs finished since `since` by status, and the
    median duration of those that completed."""
    running = Counter(j.workflow.name for j in jobs if j.parent is None and j.is_running)
    ended: dict[str, Counter[str]] = defaultdict(Counter)
    durations: dict[str, list[float]] = defaultdict(list)
    for workflow, status, seconds in finished:
        ended[workflow][status] += 1
        if status == JobStatus.COMPLETED:
            durations[workflow].append(seconds)
    names = list(dict.fromkeys([*workflows, *running, *ended]))
    return {
        "since": iso_utc(since),
        "workflows": [
            {
                "name": name,
                "running": running[name],
                "completed": ended[name]["completed"],
                "failed": ended[name]["failed"],
                "cancelled": ended[name]["cancelled"],
                "median_seconds": (
                    round(statistics.median(durations[name]), 3) if durations[name] else None
                ),
            }
            for name in names
        ],
    }


def _step_definition(workflow: Workflow, flow: Flow, step: Step, kind: str) -> dict[str, Any]:
    policy = workflow.policy(flow, step.name)
    entry: dict[str, Any] = {"name": step.name, "kind": kind, "depends": list(step.depends)}
    entry.update(step_route(step))
    entry["retries"] = 0 if step.wait else policy.retries
    timeout_s = step.timeout if step.wait else policy.timeout_s
    if timeout_s is not None:
        entry["timeout"] = timeout_s
    entry["retry_backoff"] = policy.retry_backoff.model_dump()
    if step.when is not None:
        entry["when"] = step.when
    for key, schema in (("input_schema", step.input_schema), ("output_schema", step.output_schema)):
        if schema is not None:
            entry[key] = schema.model_dump(exclude_none=True)
    for key, handler in (("fallback", step.fallback), ("compensate", step.compensate)):
        if handler is not None:
            own = workflow.policy(flow, handler.name)
            entry[key] = {
                "name": handler.name,
                "queue": handler.queue_name,
                "retries": own.retries,
                **({"timeout": own.timeout_s} if own.timeout_s is not None else {}),
            }
    if step.task:
        task = workflow.task_by_name[step.task]
        entry["task"] = {
            "name": task.name,
            "item_list_key": task.item_list_key,
            "item_key": task.item_key,
            "max_failed_items": task.max_failed_items,
            "max_in_flight": task.max_in_flight,
            "steps": [_step_definition(workflow, task, s, "step") for s in task.steps],
        }
    return entry


def definition(workflow: Workflow) -> dict[str, Any]:
    """A workflow's definition: its steps with their effective policies, hash and YAML."""
    steps = [_step_definition(workflow, workflow, step, "task" if step.task else "step")
             for step in workflow.steps]  # fmt: skip
    for kind, flow in workflow.branches.items():
        steps += [_step_definition(workflow, flow, step, kind) for step in flow.steps]
    doc = workflow.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    body: dict[str, Any] = {"name": workflow.name, "hash": workflow.content_hash}
    if workflow.timeout is not None:
        body["timeout"] = workflow.timeout
    body["vhosts"] = list(workflow.vhosts)
    if workflow.payload_schema is not None:
        body["payload_schema"] = workflow.payload_schema.model_dump(exclude_none=True)
    body["steps"] = steps
    body["yaml"] = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    return body
