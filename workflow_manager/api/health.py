"""`GET /healthz` (connected to the broker) and `GET /readyz` (able to take work): for load
balancers and orchestrators; no token needed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from workflow_manager.api.models import Health, Readiness
from workflow_manager.api.routes import Service

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/healthz",
    tags=["health"],
    response_model=Health,
    responses={503: {"model": Health, "description": "Not connected to the broker."}},
)
async def health(service: Service) -> Any:
    """200 while connected to the broker (consumers in place); else 503, with for how long."""
    if service.connected:
        return JSONResponse({"status": "ok"})
    since = round(service.disconnected_for_s or 0.0, 3)
    return JSONResponse({"status": "disconnected", "since": since}, status_code=503)


@router.get(
    "/readyz",
    tags=["health"],
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "Not ready to take work; see reasons."}},
)
async def ready(service: Service) -> Any:
    """200 when the manager can take work: broker connected and journal writable; else 503."""
    reasons = []
    if not service.connected:
        since = service.disconnected_for_s or 0.0
        reasons.append(f"not connected to RabbitMQ (for {since:.1f}s)")
    if service.failure is not None:
        reasons.append(f"stopped taking work: {service.failure}")
    if reasons:
        return JSONResponse({"status": "not-ready", "reasons": reasons}, status_code=503)
    return {"status": "ready", "reasons": []}
