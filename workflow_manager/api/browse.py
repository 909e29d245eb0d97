"""Routes for browsing runs (what the web UI reads): a job's page and children, the latest
jobs, the overview of every workflow, and a workflow's definition.

Running jobs are read from memory, the rest from the journal (committed state); each answer
costs what it shows, so a job with 10,000 children pages them rather than listing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import JSONResponse

from workflow_manager.api import jobview, listviews
from workflow_manager.api.errors import unknown_workflow
from workflow_manager.api.inputs import parse_job_id
from workflow_manager.api.models import (
    ChildPage,
    ErrorBody,
    JobList,
    JobPage,
    Overview,
    WorkflowDefinition,
)
from workflow_manager.api.routes import JobIdPath, Now, Service, WorkflowName, job_forks
from workflow_manager.api.service import JobService
from workflow_manager.engine import Job

__all__ = ["router", "OVERVIEW_WINDOW_S", "PAGE_LIMIT_MAX"]

OVERVIEW_WINDOW_S = 24 * 3600.0
PAGE_LIMIT_MAX = 500
_ID_PREFIX = r"^[0-9a-fA-F-]{1,36}$"

router = APIRouter()
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorBody}, 400: {"model": ErrorBody}}

Offset = Annotated[int, Query(ge=0, le=10_000_000, description="Entries to skip.")]
Limit = Annotated[int, Query(ge=1, le=PAGE_LIMIT_MAX, description="Entries to return at most.")]


async def _job(service: JobService, job_id: str) -> Job:
    key = parse_job_id(job_id, "job id")
    job = await service.find_job(key)
    if job is None:
        raise HTTPException(status_code=404, detail=f"no job {key} (running jobs are listed at "
                            "/api/jobs, the latest ones at /api/jobs/recent)")  # fmt: skip
    return job


@router.get(
    "/api/job/{job_id}/steps",
    tags=["jobs"],
    response_model=JobPage,
    response_model_exclude_none=True,
    responses=_NOT_FOUND,
)
async def job_steps(job_id: JobIdPath, service: Service, now: Now) -> JSONResponse:
    """A job (or child job) with every step of its definition: status, attempts, input,
    output, error, and a task step's children by status. What the web UI's job page shows."""
    job = await _job(service, job_id)
    rows = await service.history.events_of(job.id)
    children = await service.history.children(job.id) if _fans_out(job) else {}
    ended = {child_id: row.status for child_id, row in children.items()}
    if job.fork is not None and job.fork.step in job.steps:
        ended.update(await _kept_children(service, job, ended))
    waiting = jobview.waiting_body(service.state, job)
    body = jobview.job_page(job, rows, service.state.jobs, ended, now(), waiting)
    if job.parent is None and (forks := await job_forks(service, job.id)):
        body["forks"] = forks
    return JSONResponse(body)


async def _kept_children(service: JobService, job: Job, ended: Mapping[str, str]) -> dict[str, str]:
    """A fork's task step lists the source's children it kept: their statuses (completed)."""
    assert job.fork is not None
    run = job.steps[job.fork.step]
    live = service.state.jobs
    others = [cid for cid in run.children or () if cid not in ended and cid not in live]
    if not others:
        return {}
    outcomes = await service.history.job_outcomes(others)
    return {child_id: outcome[0] for child_id, outcome in outcomes.items()}


def _fans_out(job: Job) -> bool:
    return any(run.children for run in job.steps.values())


@router.get(
    "/api/job/{job_id}/children",
    tags=["jobs"],
    response_model=ChildPage,
    response_model_exclude_none=True,
    responses=_NOT_FOUND,
)
async def job_children(
    job_id: JobIdPath,
    service: Service,
    now: Now,
    step: Annotated[str, Query(description="Only the children of this task step.")] = None,  # type: ignore[assignment]
    status: Annotated[
        Literal["pending", "running", "completed", "failed", "cancelled"],
        Query(description="Only children with this status."),
    ] = None,  # type: ignore[assignment]
    offset: Offset = 0,
    limit: Limit = 50,
) -> JSONResponse:
    """A page of a job's child jobs in element order (of every task step, or of `step`), with
    the counts of each status. Children not started yet (max_in_flight) are `pending`."""
    job = await _job(service, job_id)
    if step is not None:
        tasks = [spec.name for spec in job.flow.steps if spec.task]
        if step not in tasks:
            listed = ", ".join(tasks) or "none"
            raise HTTPException(
                status_code=404,
                detail=f"job {job.id} has no task step '{step}' (its task steps: {listed})",
            )
    rows = await service.history.children(job.id)
    wanted = listviews.ChildFilter(step, status, offset, limit)
    return JSONResponse(listviews.children_page(job, wanted, service.state.jobs, rows, now()))


@router.get(
    "/api/jobs/recent",
    tags=["jobs"],
    response_model=JobList,
    response_model_exclude_none=True,
    responses={400: {"model": ErrorBody}},
)
async def recent_jobs(
    service: Service,
    now: Now,
    workflow: Annotated[str, Query(description="Only jobs of this workflow.")] = None,  # type: ignore[assignment]
    status: Annotated[
        Literal["queued", "running", "completed", "failed", "cancelled"],
        Query(description="Only jobs with this status."),
    ] = None,  # type: ignore[assignment]
    id: Annotated[
        str,
        Query(pattern=_ID_PREFIX, description="Only jobs whose id starts with this (any case)."),
    ] = None,  # type: ignore[assignment]
    before: Annotated[
        float,
        Query(ge=0, allow_inf_nan=False, description="Only jobs submitted before this (Unix s)."),
    ] = None,  # type: ignore[assignment]
    limit: Limit = 50,
) -> JSONResponse:
    """Top-level jobs, newest first, matching every filter given; `next_before` pages on."""
    listings = await service.history.recent_jobs(
        workflow=workflow,
        status=status,
        id_prefix=id.lower() if id else None,
        before=before,
        limit=limit,
    )
    clock = now()
    jobs = [
        listviews.job_listing(listing, service.state.jobs.get(listing.id), clock)
        for listing in listings
    ]
    more = len(listings) == limit
    next_before = listings[-1].submitted_at if more else None
    return JSONResponse({"jobs": jobs, "next_before": next_before})


@router.get("/api/overview", tags=["workflows"], response_model=Overview)
async def overview(service: Service, now: Now) -> JSONResponse:
    """Each workflow: top-level jobs running now; completed, failed and cancelled in the last
    24 hours; and the median duration of those that completed."""
    since = now() - OVERVIEW_WINDOW_S
    finished = await service.history.finished_since(since)
    body = listviews.overview(service.workflows, service.state.jobs.values(), finished, since)
    return JSONResponse(body)


@router.get(
    "/api/workflow/{name}/definition",
    tags=["workflows"],
    response_model=WorkflowDefinition,
    response_model_exclude_none=True,
    responses={404: {"model": ErrorBody}},
)
async def workflow_definition(name: WorkflowName, service: Service) -> JSONResponse:
    """A loaded workflow's definition: its steps with their effective policies (retries,
    timeout, backoff), its tasks, on_error/on_cancel steps, content hash and YAML."""
    workflow = service.workflows.get(name)
    if workflow is None:
        raise unknown_workflow(name, service.workflows)
    return JSONResponse(listviews.definition(workflow))
