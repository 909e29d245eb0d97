"""POST /api/job/{id}/signal/{step}: a signal for a waiting step (`wait: true`).

The body is a JSON object: the step's output. A signal for a step not reached yet is kept
and completes the step when it is reached.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, Field

from workflow_manager.api.inputs import parse_job_id, parse_payload
from workflow_manager.api.models import ErrorBody
from workflow_manager.api.routes import OWNER_AWAY, JobIdPath, Service

__all__ = ["router", "SignalResponse"]

router = APIRouter()


class SignalResponse(BaseModel):
    """What a signal did: completed the waiting step, or was kept until the step is reached."""

    job: str
    step: str
    status: Literal["completed", "kept"] = Field(
        description="completed: the step was waiting and is done; kept: the step has not been "
        "reached yet, and completes with this signal when it is."
    )


_BODY_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The signal: a JSON object, which becomes the waiting step's output.",
        "content": {
            "application/json": {
                "schema": {"type": "object", "additionalProperties": True},
                "example": {"approved": True, "by": "ana"},
            }
        },
    }
}


@router.post(
    "/api/job/{job_id}/signal/{step}",
    tags=["jobs"],
    response_model=SignalResponse,
    responses={**{code: {"model": ErrorBody} for code in (400, 404, 409)}, **OWNER_AWAY},
    openapi_extra=_BODY_DOC,
)
async def signal_step(
    job_id: JobIdPath,
    step: Annotated[str, Path(description="The waiting step's name (`wait: true`).")],
    request: Request,
    service: Service,
) -> dict[str, Any]:
    """Signal a waiting step: the JSON object body is its output. 404 unknown job or step,
    409 a step that has already ended (or does not wait), 400 a body that is no JSON object."""
    canonical = parse_job_id(job_id, "job id")
    payload = parse_payload(
        await request.body(),
        "the signal (it becomes the step's output)",
        request.app.state.max_json_depth,
    )
    status = await service.signal(canonical, step, payload)
    return {"job": canonical, "step": step, "status": status}
