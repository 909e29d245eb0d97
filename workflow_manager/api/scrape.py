"""`GET /metrics`: the manager's Prometheus metrics, in the text format. No token needed."""

from __future__ import annotations

from typing import Protocol

from fastapi import APIRouter, Request
from fastapi.responses import Response

__all__ = ["MetricsSource", "router"]

# The media type's version is prometheus_client's (`MetricsSource.content_type`).
_TEXT_FORMAT = "text/plain"


class MetricsSource(Protocol):
    """What the route needs of the metrics: the exposition text and its media type."""

    content_type: str

    def render(self) -> bytes:
        """Every metric in the Prometheus text format."""
        ...


router = APIRouter()


@router.get(
    "/metrics",
    tags=["health"],
    response_class=Response,
    responses={200: {"content": {_TEXT_FORMAT: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    """Jobs, steps, dead letters, journal commits and the broker connection, for Prometheus."""
    source: MetricsSource = request.app.state.metrics
    return Response(source.render(), media_type=source.content_type)
