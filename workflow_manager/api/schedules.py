"""The schedules: GET /api/schedules, and pausing and resuming one (journaled)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from workflow_manager.api.models import ErrorBody
from workflow_manager.api.routes import Service
from workflow_manager.scheduler import view_json

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
    last_job: str | None = Field(
        description="The last job a firing started (null: none yet, or pruned)."
    )
    paused: bool


class ScheduleList(BaseModel):
    """Every schedule of every workflow served."""

    schedules: list[ScheduleEntry]


WorkflowName = Annotated[str, Path(description="The workflow's name.")]
ScheduleName = Annotated[str, Path(description="The schedule's name in that workflow.")]


@router.get("/api/schedules", tags=["schedules"], response_model=ScheduleList)
async def list_schedules(service: Service) -> dict[str, Any]:
    """Every schedule with its next fire time, its last job and whether it is paused."""
    return {"schedules": [view_json(view) for view in await service.schedules.views()]}


def _setting(paused: bool, summary: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The endpoint that pauses (`paused`) or resumes a schedule; journaled, kept at a restart."""

    async def endpoint(
        workflow: WorkflowName, name: ScheduleName, service: Service
    ) -> dict[str, Any]:
        return view_json(await service.schedules.set_paused(workflow, name, paused))

    endpoint.__doc__ = summary
    return endpoint


# Two routes, not one with an {action}: any other action is an unknown path (404).
for _action, _paused, _summary in (
    ("pause", True, "Pause a schedule: no firing (nor catch-up) until resumed; journaled."),
    ("resume", False, "Resume a paused schedule: it fires again from its next fire time."),
):
    router.add_api_route(
        f"/api/schedules/{{workflow}}/{{name}}/{_action}",
        _setting(_paused, _summary),
        methods=["POST"],
        name=f"{_action}_schedule",
        tags=["schedules"],
        response_model=ScheduleEntry,
        responses={404: {"model": ErrorBody}},
    )
