"""The routes: each reads its inputs, asks the service or a view, and returns the body.

Every route is `async def` on purpose: it then runs on the event loop that drives the
engine, so it never reads the job state while an event is half applied. (FastAPI would run
a plain `def` route in a worker thread.)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter

from workflow_manager.api import clusterwide, forwarding, jobview, views
from workflow_manager.api.errors import unknown_workflow
from workflow_manager.api.inputs import (
    parse_job_id,
    parse_meta,
    parse_payload,
    parse_start_time,
    resolve_job_id,
)
from workflow_manager.api.models import (
    DuplicateBody,
    ErrorBody,
    JobDetail,
    JobIds,
    SubmitResponse,
    WorkflowJobs,
    WorkflowSummary,
)
from workflow_manager.api.service import Clock, JobService
from workflow_manager.engine import Job
from workflow_manager.engine.state import MAX_PRIORITY
from workflow_manager.errors import Debounced
from workflow_manager.recorder import forks_journal_id
from workflow_manager.starttimes import MAX_DELAY_S, MAX_UNIX_S
from workflow_manager.traces import submitter_trace

__all__ = ["router", "OWNER_AWAY", "job_forks"]

DEFAULT_INTERVAL_MIN = 480.0
_TRACEPARENT_DOC = (
    "W3C trace context: the job joins this trace (its span's parent is this span); "
    "a malformed value is ignored and the job starts a trace of its own."
)
_PRIORITY_DOC = (
    "The job's priority, 0 to 9 (higher goes first wherever the manager holds work back; "
    "step requests carry it as their AMQP priority). Default 0."
)
_DISCONNECTED = "not connected to RabbitMQ, so no job can start now; try again shortly"


async def _service(request: Request) -> JobService:
    service: JobService = request.app.state.service
    return service


async def _clock(request: Request) -> Clock:
    clock: Clock = request.app.state.clock
    return clock


Service = Annotated[JobService, Depends(_service)]
Now = Annotated[Clock, Depends(_clock)]
WorkflowName = Annotated[str, Path(description="The workflow's name.")]
JobIdPath = Annotated[
    str,
    Path(
        description="The job's id: a UUID, in any letter case.",
        json_schema_extra={"format": "uuid"},
    ),
]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


# Several managers: another manager's job is answered by that manager, or 503 when it cannot be.
OWNER_AWAY: dict[int | str, dict[str, Any]] = {
    503: {
        "model": ErrorBody,
        "description": "Another manager runs the job and cannot be asked now (its partition "
        "is being taken over, or the manager is unreachable); try again after `Retry-After`.",
    }
}


_UUID = {"type": "string", "format": "uuid"}
_PAYLOAD_DOC: dict[str, Any] = {
    # `?id=` is declared here rather than by FastAPI, which would make it "string or null".
    "parameters": [
        {
            "name": "id",
            "in": "query",
            "required": False,
            "description": "The new job's id (a UUID); generated when not given. When the "
            "body has a string `id` too, both must name the same job (else 400).",
            "schema": _UUID,
        },
        # Declared here too, so their schema says what the manager reads (FastAPI: "string").
        {
            "name": "delay",
            "in": "query",
            "required": False,
            "description": "Start the job this many seconds from now; it is `scheduled` until "
            "then (see `not_before`).",
            "schema": {"type": "number", "minimum": 0, "maximum": MAX_DELAY_S},
        },
        {
            "name": "not_before",
            "in": "query",
            "required": False,
            "description": "Start the job at this time: RFC 3339 (e.g. 2026-05-01T09:00:00Z) "
            "or Unix seconds; it is `scheduled` until then (a past time starts it now). With "
            "`delay` too, the later of the two.",
            "schema": {
                "anyOf": [
                    {"type": "number", "maximum": MAX_UNIX_S},
                    {"type": "string", "format": "date-time"},
                ]
            },
        },
        {
            "name": "meta",
            "in": "query",
            "required": False,
            "description": "Job metadata: a JSON object kept with the job and sent on every "
            "request of it and its children as the `x-meta` header (the `x-meta` request header "
            "works too, not both).",
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
    ],
    "requestBody": {
        "required": True,
        "description": "The job payload: any JSON object. A string `id` in it is taken as the "
        "job id, like `?id=`, so it must be a UUID; any other `id` is just payload.",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"id": {"anyOf": [_UUID, {"not": {"type": "string"}}]}},
                    "additionalProperties": True,
                },
                "example": {"text": "It was a bright cold day in April"},
            }
        },
    },
}

router = APIRouter()


_SUMMARIES = TypeAdapter(list[WorkflowSummary])


@router.get("/api/workflows", tags=["workflows"], response_model=list[WorkflowSummary])
async def list_workflows(request: Request, service: Service) -> list[dict[str, Any]]:
    """Every workflow served, with how many of its top-level jobs are running. With several
    managers, on all of them (see `GET /api/jobs`)."""
    own = views.workflow_summaries(service.workflows, service.state.jobs.values())
    found = await clusterwide.gather(request, service, own, _summaries)
    return clusterwide.merged_summaries(found.answers, found.journal)


def _summaries(body: bytes) -> list[dict[str, Any]]:
    """Another manager's `GET /api/workflows` answer (ValueError when it is none)."""
    return [entry.model_dump() for entry in _SUMMARIES.validate_json(body)]


@router.post(
    "/api/workflow/{name}",
    tags=["workflows"],
    response_model=SubmitResponse,
    response_model_exclude_none=True,
    responses={**_errors(400, 404, 503), 409: {"model": DuplicateBody}},
    openapi_extra=_PAYLOAD_DOC,
)
async def submit_job(
    name: WorkflowName,
    request: Request,
    service: Service,
    now: Now,
    job_id: Annotated[str | None, Query(alias="id", include_in_schema=False)] = None,
    delay: Annotated[str | None, Query(include_in_schema=False)] = None,
    not_before: Annotated[str | None, Query(include_in_schema=False)] = None,
    traceparent: Annotated[str | None, Header(description=_TRACEPARENT_DOC)] = None,
    priority: Annotated[int, Query(ge=0, le=MAX_PRIORITY, description=_PRIORITY_DOC)] = 0,
    # Declared in _PAYLOAD_DOC as JSON content; the header is the trigger's way, kept aside.
    meta: Annotated[str | None, Query(include_in_schema=False)] = None,
    x_meta: Annotated[str | None, Header(alias="x-meta", include_in_schema=False)] = None,
) -> dict[str, Any]:
    """Start a job of workflow `name` (now, or later with `delay` / `not_before`); the JSON
    object body is its payload, and `meta` (query) or `x-meta` (header) its metadata: a JSON
    object sent with each of its requests."""
    if name not in service.workflows:
        raise unknown_workflow(name, service.workflows)
    if not service.connected:
        # Refuse rather than hold the request open until the broker is back.
        raise HTTPException(status_code=503, detail=_DISCONNECTED)
    start_at = parse_start_time(delay, not_before, now())
    depth = request.app.state.max_json_depth
    payload = parse_payload(await request.body(), max_depth=depth)
    job_meta = parse_meta(meta, x_meta, depth)
    trace = submitter_trace(traceparent, "POST /api/workflow")
    chosen_id = resolve_job_id(job_id, payload)
    try:
        new_id = await service.submit(
            name, payload, chosen_id, trace, priority=priority, not_before=start_at,
            **({"meta": job_meta} if job_meta is not None else {}),
        )  # fmt: skip
    except Debounced as exc:
        # Not a failure: the job of the debounce window this trigger joined does its work.
        return {"id": exc.job_id, "status": "debounced"}
    return {"id": new_id}


@router.get(
    "/api/workflow/{name}",
    tags=["workflows"],
    response_model=WorkflowJobs,
    responses=_errors(400, 404),
)
async def workflow_jobs(
    name: WorkflowName,
    service: Service,
    now: Now,
    interval: Annotated[
        float,
        Query(
            gt=0,
            allow_inf_nan=False,
            description="Minutes back to look for finished jobs.",
        ),
    ] = DEFAULT_INTERVAL_MIN,
) -> dict[str, Any]:
    """Top-level jobs of workflow `name`: running, waiting to start (queued, scheduled), and
    finished within `interval` minutes."""
    found = await service.workflow_jobs(name, finished_since=now() - interval * 60)
    # A workflow dropped on reload stays visible while the journal still holds its jobs.
    if name not in service.workflows and not any(found.values()):
        raise unknown_workflow(name, service.workflows)
    return {
        "running": found.get("running", []),
        "queued": found.get("queued", []),
        "scheduled": found.get("scheduled", []),
        "completed": found.get("completed", []),
        "failed": found.get("failed", []) + found.get("cancelled", []),
    }


@router.get("/api/jobs", tags=["jobs"], response_model=JobIds)
async def running_jobs(request: Request, service: Service) -> dict[str, Any]:
    """Ids of every running job, child jobs included, in the order they were submitted.

    With several managers (`--partitions`), those of every manager: each one's in that order,
    the managers taken by name. The running top-level jobs of a manager that cannot be asked
    now (or of a partition being taken over) come from the journal, last, without their
    child jobs."""
    own = views.running_job_ids(service.state.jobs.values())["jobs"]
    found = await clusterwide.gather(request, service, own, _job_ids)
    return {"jobs": clusterwide.merged_job_ids(found.answers, found.journal)}


def _job_ids(body: bytes) -> list[str]:
    """Another manager's `GET /api/jobs` answer (ValueError when it is none)."""
    return JobIds.model_validate_json(body).jobs


@router.get(
    "/api/job/{job_id}",
    tags=["jobs"],
    response_model=JobDetail,
    response_model_exclude_none=True,
    responses={**_errors(400, 404), **OWNER_AWAY},
)
async def job_detail(
    job_id: JobIdPath,
    request: Request,
    service: Service,
    now: Now,
) -> Response:
    """One job or child job: its steps by state, and its result or error once it has ended."""
    key = parse_job_id(job_id, "job id")
    job = await forwarding.find_job(request, service, key)
    if isinstance(job, Response):
        return job  # the answer of the manager running it
    if job is None:
        message = f"no job {key} (running jobs are listed at /api/jobs)"
        raise HTTPException(status_code=404, detail=message)
    body = views.job_detail(job, now())
    if (waiting := jobview.waiting_body(service.state, job)) is not None:
        body["waiting_for"] = waiting
    if job.parent is None and (forks := await job_forks(service, job.id)):
        body["forks"] = forks
    return JSONResponse(body)


async def job_forks(service: JobService, job_id: str) -> list[dict[str, Any]]:
    """The jobs forked from `job_id`, oldest first (from the journal)."""
    return views.fork_entries(await service.history.events_of(forks_journal_id(job_id)))


@router.delete(
    "/api/job/{job_id}",
    tags=["jobs"],
    response_model=JobDetail,
    response_model_exclude_none=True,
    responses={**_errors(400, 404, 409), **OWNER_AWAY},
)
async def cancel_job(
    job_id: JobIdPath,
    service: Service,
    now: Now,
) -> JSONResponse:
    """Cancel a running job: no more dispatches for it or its children; on_cancel runs."""
    job = await service.cancel(parse_job_id(job_id, "job id"))
    return _job_response(job, now())


@router.post(
    "/api/job/{job_id}/retry",
    tags=["jobs"],
    response_model=JobDetail,
    response_model_exclude_none=True,
    responses={**_errors(400, 404, 409), **OWNER_AWAY},
)
async def retry_job(
    job_id: JobIdPath,
    service: Service,
    now: Now,
) -> JSONResponse:
    """Run a failed job again from where it failed: completed steps keep their outputs."""
    job = await service.retry(parse_job_id(job_id, "job id"))
    return _job_response(job, now())


@router.post(
    "/api/job/{job_id}/pause",
    tags=["jobs"],
    response_model=JobDetail,
    response_model_exclude_none=True,
    responses={**_errors(400, 404, 409), **OWNER_AWAY},
)
async def pause_job(job_id: JobIdPath, service: Service, now: Now) -> JSONResponse:
    """Pause a running job: no new request of it or its children goes out and its timers wait;
    requests in flight finish and their results are kept. Journaled: it stays paused across a
    restart. 409 when it is not running or is paused already."""
    job = await service.pause(parse_job_id(job_id, "job id"), True)
    return _job_response(job, now())


@router.post(
    "/api/job/{job_id}/resume",
    tags=["jobs"],
    response_model=JobDetail,
    response_model_exclude_none=True,
    responses={**_errors(400, 404, 409), **OWNER_AWAY},
)
async def resume_job(job_id: JobIdPath, service: Service, now: Now) -> JSONResponse:
    """Resume a paused job: the requests it held back go out, its timers that came due fire.
    409 when it is not paused."""
    job = await service.pause(parse_job_id(job_id, "job id"), False)
    return _job_response(job, now())


def _job_response(job: Job, now: float) -> JSONResponse:
    """A job as JSON, serialised by `json` rather than pydantic: payloads and results are the
    users' own JSON, nested as deep as they like, and their nulls (`"step": null`) stay."""
    return JSONResponse(views.job_detail(job, now))
