"""`GET /metrics`: the manager's Prometheus metrics, in the text format; `GET /metrics/cluster`:
every manager's summed (workflow_manager.api.clustermetrics). No token needed for either."""

from __future__ import annotations

import logging
from typing import Protocol

from fastapi import APIRouter, Request
from fastapi.responses import Response

from workflow_manager.api.clustermetrics import MemberMetrics, read_members, sum_expositions
from workflow_manager.api.forwarding import Forwarder
from workflow_manager.cluster.directory import Peer
from workflow_manager.errors import JournalError

__all__ = ["MetricsSource", "router"]

log = logging.getLogger(__name__)

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


@router.get(
    "/metrics/cluster",
    tags=["health"],
    response_class=Response,
    responses={200: {"content": {_TEXT_FORMAT: {"schema": {"type": "string"}}}}},
)
async def cluster_metrics(request: Request) -> Response:
    """The metrics of every manager of the cluster, summed by name and labels (with several
    managers, `--partitions`; one manager: the same as `/metrics`). A manager that cannot be
    asked in time is left out and counted in `workflow_manager_cluster_members_unreached`."""
    source: MetricsSource = request.app.state.metrics
    own = source.render()
    directory = request.app.state.service.directory
    if directory is None:
        return Response(own, media_type=source.content_type)
    peers: list[Peer] = []
    try:
        peers = await directory.others()
    except JournalError as err:
        log.warning("/metrics/cluster answered for this manager alone: %s", err)
    forwarder: Forwarder = request.app.state.forwarder
    asked = await read_members(forwarder.client(), peers, directory.this_manager)
    members = MemberMetrics({**asked.texts, directory.this_manager: own.decode()}, asked.unreached)
    return Response(sum_expositions(members), media_type=source.content_type)
