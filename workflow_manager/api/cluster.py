"""GET /api/cluster: the managers sharing this journal, their partitions and leases."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from workflow_manager.api.routes import Service

__all__ = ["router"]

router = APIRouter()


class ManagerEntry(BaseModel):
    """A manager alive on this journal; one holding no partition is a standby."""

    name: str = Field(description="host:pid, as in the lease table.")
    partitions: list[int] = Field(description="The partitions it runs; empty: a standby.")
    lease_age_s: float = Field(
        description="Seconds since its oldest lease (or, holding none, its heartbeat) was renewed."
    )
    api_url: str | None = Field(
        None, description="Where the other managers reach its HTTP API (--advertise-url)."
    )


class LeaseEntry(BaseModel):
    """One partition's lease as the database has it."""

    partition: int
    owner: str | None = Field(description="The manager running it; null when free.")
    epoch: int = Field(description="Raised at each take-over; every commit checks it.")
    expires_in_s: float = Field(description="Negative: expired (free to take).")
    renewed_s_ago: float | None


class ClusterView(BaseModel):
    """The partitions of this journal and who runs them; nulls and empty lists without
    --partitions (one manager runs every job)."""

    partitions: int | None
    manager: str | None = Field(description="The manager that answered.")
    managers: list[ManagerEntry]
    leases: list[LeaseEntry]


@router.get("/api/cluster", tags=["cluster"], response_model=ClusterView)
async def cluster(service: Service) -> dict[str, Any]:
    """The managers, their partitions and lease ages, read from the lease table."""
    return await service.cluster()
