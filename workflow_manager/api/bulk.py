"""POST /api/jobs/bulk: one action on every job a filter matches; GET /api/bulk/{id}: how far it
got. The filter is evaluated once, when asked; the jobs it matched are journaled as one bulk
action and carried out in the background (`workflow_manager.bulkactions`). With several
managers, the bulk is split into one part per partition, each carried out by the manager
running it (`workflow_manager.api.clusterbulk`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import JSONResponse
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    TypeAdapter,
    ValidationError,
)

from workflow_manager.api.bulkfilter import BulkFilter
from workflow_manager.api.clusterbulk import Unanswered, bulk_across
from workflow_manager.api.clusterbulk import router as cluster_router
from workflow_manager.api.errors import error_response, validation_message
from workflow_manager.api.forks import ForkRequest
from workflow_manager.api.inputs import parse_job_id, parse_payload
from workflow_manager.api.models import ErrorBody
from workflow_manager.api.routes import Service
from workflow_manager.engine import BULK_ACTIONS

__all__ = ["router", "BulkRequest", "BulkFilter", "BulkAccepted", "BulkStatus"]
# (BulkRequest: BulkControl or BulkForks, told apart by `action`.)

router = APIRouter()
router.include_router(cluster_router)  # between managers: a bulk's parts

_SAMPLE = 20  # ids a dry run shows


class BulkFork(ForkRequest):
    """A bulk fork: each job forked from the same step (`input`, if given, for every one)."""


class BulkControl(BaseModel):
    """Cancel, retry, pause or resume every job the filter matches now."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["cancel", "retry", "pause", "resume"]
    filter: BulkFilter = Field(description="Which jobs (evaluated once, now).")
    dry_run: StrictBool = Field(
        default=False, description="Only say how many jobs match (and the first ids): no action."
    )


class BulkForks(BaseModel):
    """Fork every job the filter matches now, each from the same step."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["fork"]
    filter: BulkFilter = Field(description="Which jobs (evaluated once, now).")
    fork: BulkFork = Field(description="How to fork each job.")
    dry_run: StrictBool = Field(
        default=False, description="Only say how many jobs match (and the first ids): no action."
    )


BulkRequest = Annotated[BulkControl | BulkForks, Field(discriminator="action")]
_REQUEST: TypeAdapter[BulkControl | BulkForks] = TypeAdapter(BulkRequest)


class BulkAccepted(BaseModel):
    """A bulk action journaled (or, for a dry run, only the jobs it would act on)."""

    id: str | None = Field(default=None, description="The bulk action's id (not for a dry run).")
    action: str
    matched: int = Field(description="How many jobs the filter matched.")
    sample: list[str] = Field(description=f"The first {_SAMPLE} of them, oldest first.")


class BulkError(BaseModel):
    """A job the action did not change, and why."""

    job: str
    reason: str


class BulkStatus(BaseModel):
    """Where a bulk action stands."""

    id: str
    action: str
    status: Literal["running", "finished"]
    total: int = Field(description="The jobs it acts on.")
    done: int = Field(description="The jobs it has acted on so far.")
    changed: int = Field(description="Of those, the jobs the action changed.")
    refused: int = Field(description="Of those, the jobs it did not change (see `errors`).")
    errors: list[BulkError] = Field(description="The first 100 jobs not changed, with why.")
    filter: dict[str, Any]
    params: dict[str, Any] | None = None
    started_at: str
    finished_at: str | None = None


def _problems(exc: ValidationError) -> str:
    """The body's problems, each where it is: without the action pydantic puts first (it tells
    the two kinds of body apart by it), and without repeating the value a message names."""
    actions = ", ".join(BULK_ACTIONS)
    errors: list[dict[str, Any]] = []
    for error in exc.errors():
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            got = f" (got {body_action!r})" if (body_action := _action(error)) else ""
            errors.append({"loc": ("body", "action"), "msg": f"must be one of {actions}{got}"})
            continue
        message = error["msg"].removeprefix("Value error, ")
        errors.append({"loc": ("body", *error["loc"][1:]), "msg": message})
    return validation_message(errors)


def _action(error: Any) -> Any:
    """The action a body named, if it named one (for a message about it)."""
    given = error.get("input")
    return given.get("action") if isinstance(given, dict) else None


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON Schema with its `$defs` written in place: the OpenAPI document holds
    the body's schema inline, where `#/$defs/...` would point nowhere."""
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    resolved.pop("discriminator", None)  # its mapping names $defs; each branch's `action` says it
    return resolved


_BODY_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": _inlined(_REQUEST.json_schema(by_alias=True)),
                "example": {
                    "action": "cancel",
                    "filter": {"workflow": "ingest", "status": "running"},
                },
            }
        },
    }
}


@router.post(
    "/api/jobs/bulk",
    tags=["jobs"],
    status_code=202,
    response_model=BulkAccepted,
    responses={
        200: {"model": BulkAccepted, "description": "A dry run: the jobs matched."},
        **{code: {"model": ErrorBody} for code in (400, 409, 503)},
    },
    openapi_extra=_BODY_DOC,
)
async def bulk_action(request: Request, service: Service) -> JSONResponse:
    """Cancel, retry, pause, resume or fork every top-level job a filter matches now: journaled
    as one bulk action, carried out in the background (follow it at `GET /api/bulk/{id}`). A
    job that starts matching later is not included; a job the action cannot change (a retry of
    a running job) is counted and skipped. 409 when the filter matches more than
    MAX_BULK_JOBS (250,000) jobs. With several managers, any one may be asked: it matches
    every manager's jobs and each partition's part is carried out by its owner; 503 (with
    Retry-After) while a partition is being taken over."""
    body = parse_payload(await request.body(), "the bulk request", request.app.state.max_json_depth)
    try:
        asked = _REQUEST.validate_python(body)
    except ValidationError as exc:
        raise HTTPException(status_code=400, detail=_problems(exc)) from None
    params = None
    if isinstance(asked, BulkForks):
        params = asked.fork.model_dump(by_alias=True, exclude_none=True)
    if service.directory is None:
        bulk_id, matched = await service.bulk(
            asked.action, asked.filter.criteria(), params, dry_run=asked.dry_run
        )
    else:
        shown = asked.filter.model_dump(mode="json", exclude_none=True)
        try:
            bulk_id, matched = await bulk_across(
                request, service, asked.action, asked.filter.criteria(), shown, params,
                dry_run=asked.dry_run,
            )  # fmt: skip
        except Unanswered as why:
            return error_response(503, f"{why}; try again shortly", {"Retry-After": "1"})
    answer: dict[str, Any] = {"action": asked.action, "matched": len(matched),
                              "sample": matched[:_SAMPLE]}  # fmt: skip
    if bulk_id is not None:
        answer = {"id": bulk_id, **answer}
    return JSONResponse(answer, status_code=200 if asked.dry_run else 202)


@router.get(
    "/api/bulk/{bulk_id}",
    tags=["jobs"],
    response_model=BulkStatus,
    response_model_exclude_none=True,
    responses={code: {"model": ErrorBody} for code in (400, 404)},
)
async def bulk_status(
    bulk_id: Annotated[
        str,
        Path(description="The bulk action's id (a UUID).", json_schema_extra={"format": "uuid"}),
    ],
    service: Service,
) -> JSONResponse:
    """Where a bulk action stands: how many jobs it acted on, changed and did not (with why)."""
    key = parse_job_id(bulk_id, "bulk id")
    view = await service.bulk_status(key)
    if view is None:
        raise HTTPException(status_code=404, detail=f"no bulk action {key}")
    return JSONResponse(view)
