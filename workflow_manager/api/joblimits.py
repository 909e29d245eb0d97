"""GET /api/limits: the nested limits of the workflow file (`limits:`), each with the keys
in use under it and their running and queued jobs, as this manager counts them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from workflow_manager.api.routes import Service
from workflow_manager.engine.admission import limits_in_use

__all__ = ["router", "LimitView", "LimitKeyView", "LimitList"]

router = APIRouter()


class LimitKeyView(BaseModel):
    """One key of a limit with jobs under it."""

    key: str = Field(description="The key's value (JSON); `null` for a limit without `key`.")
    running: int = Field(description="Jobs holding its slots (started, or starting now).")
    queued: int = Field(description="Jobs waiting for one of its slots.")


class LimitView(BaseModel):
    """One entry of `limits:`, and its keys with jobs running or queued."""

    name: str
    limit: int
    key: str | None = Field(description="The key expression; null: one count for all jobs.")
    workflows: list[str] | None = Field(description="The workflows it applies to; null: all.")
    keys: list[LimitKeyView]


class LimitList(BaseModel):
    """Every nested limit, in file order."""

    limits: list[LimitView]


@router.get("/api/limits", tags=["workflows"], response_model=LimitList)
async def list_limits(service: Service) -> dict[str, Any]:
    """Each entry of the workflow file's `limits:` with the keys in use under it and their
    running and queued jobs. With several managers, each counts its own jobs."""
    state = service.state
    keys: dict[str, list[dict[str, Any]]] = {}
    for use in limits_in_use(state):
        keys.setdefault(use.name, []).append(
            {"key": use.key, "running": use.running, "queued": use.queued}
        )
    return {
        "limits": [
            {
                "name": entry.name,
                "limit": entry.limit,
                "key": entry.key,
                "workflows": list(entry.workflows) if entry.workflows is not None else None,
                "keys": keys.get(entry.name, []),
            }
            for entry in state.limits
        ]
    }
