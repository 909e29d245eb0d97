"""POST /api/job/{id}/fork: a new job that keeps what a finished job did before a step and
runs the rest again (`workflow_manager.engine.forking` decides which steps and children).

The body names the step (`from`), and may give that step a new input, pick the definition the
fork runs and say which children of a task step run again.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflow_manager.api.errors import validation_message
from workflow_manager.api.inputs import parse_job_id, parse_payload
from workflow_manager.api.models import ErrorBody
from workflow_manager.api.routes import OWNER_AWAY, JobIdPath, Service

__all__ = ["router", "ForkRequest", "ForkResponse"]

router = APIRouter()


class ForkRequest(BaseModel):
    """How to fork a job."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_step: str = Field(
        alias="from",
        min_length=1,
        description="The step to run again from: it and every step downstream of it run; the "
        "others keep the source's outputs where they completed.",
    )
    input: dict[str, Any] | None = Field(
        default=None,
        description="The `from` step's input (default: the input the source gave it, made "
        "from the kept outputs as for any step).",
    )
    definition: Literal["current", "pinned"] = Field(
        default="current",
        description="current: the workflow's definition now (a fixed one); pinned: the "
        "definition the source ran.",
    )
    children: Literal["failed", "all"] = Field(
        default="failed",
        description="For a task step: failed keeps the source's completed children (whose "
        "payload is unchanged) and runs the failed, cancelled and unfinished ones; all runs "
        "every child again.",
    )


class ForkResponse(BaseModel):
    """The fork: a new job, linked to its source."""

    id: str = Field(description="The new job's id.")
    forked_from: str = Field(description="The source job's id.")
    step: str = Field(description="The step the fork runs again from.")


@router.post(
    "/api/job/{job_id}/fork",
    tags=["jobs"],
    status_code=201,
    response_model=ForkResponse,
    responses={**{code: {"model": ErrorBody} for code in (400, 404, 409, 503)}, **OWNER_AWAY},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": ForkRequest.model_json_schema(by_alias=True),
                    "example": {"from": "count", "input": {"text": "fixed"}},
                }
            },
        }
    },
)
async def fork_job(job_id: JobIdPath, request: Request, service: Service) -> JSONResponse:
    """Fork a completed, failed or cancelled job from a step: the new job keeps the source's
    outputs of the steps before it and runs it (with `input`, if given) and what follows.
    Works for jobs that have left memory too. 404 no such job or a step its workflow does not
    have, 409 a job still running (or a child job), 400 a bad body."""
    source = parse_job_id(job_id, "job id")
    if not service.connected:
        raise HTTPException(
            status_code=503, detail="not connected to RabbitMQ, so no job can start now"
        )
    body = parse_payload(await request.body(), "the fork request", request.app.state.max_json_depth)
    try:
        asked = ForkRequest.model_validate(body)
    except ValidationError as exc:
        message = validation_message([dict(error) for error in exc.errors()])
        raise HTTPException(status_code=400, detail=message) from None
    new_id = await service.fork(
        source, asked.from_step, input=asked.input, definition=asked.definition,
        children=asked.children,
    )  # fmt: skip
    return JSONResponse(
        {"id": new_id, "forked_from": source, "step": asked.from_step}, status_code=201
    )
