"""The schedules: GET /api/schedules, and pausing and resuming one (journaled)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from manager.api.models import ErrorBody
from manager.api.routes import Service
from manager.scheduler import view_json

__all__ = ["router", "ScheduleEntry"]

router = APIRouter()


class ScheduleEntry(BaseModel):
    """One schedule of a workflow: when it fires next, the job it started last, whether paused."""

    workflow: str
    name: str
    cron: str | None = Field(description="Five cron fields, read in `timezone`; or null.")
    every: float | None = Field(description="Seconds between firings; or null (a cron).")
    timezone: str
    catch_up: bool
    overlap: Literal["skip", "allow"]
    next_fire_at: float | None = Field(description="Unix seconds; null while paused.")
    last_job: str | None = Field(description="The last job a firing started (this run).")
    paused: bool


class ScheduleList(BaseModel):
    """Every schedule of every workflow served."""

    schedules: list[ScheduleEntry]


WorkflowName = Annotated[str, Path(description="The workflow's name.")]
ScheduleName = Annotated[str, Path(description="The schedule's name in that workflow.")]


@router.get("/api/schedules", tags=["schedules"], response_model=ScheduleList)
async def list_schedules(service: Service) -> dict[str, Any]:
    """Every schedule with its next fire time, its last job and whether it is paused."""
    return {"schedules": [view_json(view) for view in service.schedules.views()]}


@router.post(
    "/api/schedules/{workflow}/{name}/{action}",
    tags=["schedules"],
    response_model=ScheduleEntry,
    responses={404: {"model": ErrorBody}},
)
async def pause_or_resume(
    workflow: WorkflowName,
    name: ScheduleName,
    action: Annotated[
        Literal["pause", "resume"],
        Path(description="pause: no firing (nor catch-up) until resumed; resume: fire again."),
    ],
    service: Service,
) -> dict[str, Any]:
    """Pause or resume a schedule; journaled, so a restart keeps it paused."""
    view = await service.schedules.set_paused(workflow, name, action == "pause")
    return view_json(view)
