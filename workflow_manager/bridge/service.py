"""The bridge: a pyworker Worker whose handlers call the HTTP steps' URLs.

It consumes each HTTP step's queue (the step's `queue`, else its name, as the manager sends
them), so the manager dispatches HTTP steps like any other step: retries and timeouts apply.
Payloads by reference are pyworker's: a request's references are resolved before the HTTP call,
and a large answer's values are stored in the first payload store.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from pyworker import Worker
from workflow_manager.bridge.caller import HttpStep
from workflow_manager.bridge.errors import BridgeConfigError
from workflow_manager.bridge.routes import Route, collect_routes
from workflow_manager.config.models import Workflow

__all__ = ["BridgeSettings", "build_bridge", "serve_bridge"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BridgeSettings:
    """How the bridge connects, how many HTTP requests it has in flight at most, and its payload
    stores (`NAME=URL` entries; None: $WM_PAYLOAD_STORES) and reply threshold (None:
    $WM_PAYLOAD_REF_THRESHOLD, else 256 KiB)."""

    amqp_url: str | None = None
    concurrency: int = 10
    stop_timeout_s: float = 30.0
    payload_stores: tuple[str, ...] | None = None
    payload_ref_threshold: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int):
            value = self.concurrency
            raise BridgeConfigError(f"concurrency: expected a whole number, got {value!r}")
        if self.concurrency < 1:
            raise BridgeConfigError(f"concurrency: must be 1 or more, got {self.concurrency}")


def build_bridge(
    routes: Mapping[str, Route],
    settings: BridgeSettings,
    client: httpx.AsyncClient,
    environ: Mapping[str, str] | None = None,
) -> Worker:
    """A Worker with one HttpStep handler per route, sharing `client` and a concurrency bound;
    what `settings` leaves unset comes from `environ` (default: the process's) at start.

    Raises:
        pyworker.SettingsError: A payload store entry or the threshold is invalid.
    """
    worker = Worker(
        settings.amqp_url,
        prefetch=settings.concurrency,
        name=f"workflow-manager bridge pid={os.getpid()}",
        stop_timeout_s=settings.stop_timeout_s,
        queue_prefix="",  # the manager sends to the queues as the file names them
        environ=environ,
        payload_stores=settings.payload_stores,
        payload_ref_threshold=settings.payload_ref_threshold,
    )
    slots = asyncio.Semaphore(settings.concurrency)
    for queue, route in routes.items():
        worker.step(queue)(HttpStep(route, client, slots))
    return worker


def http_client(concurrency: int) -> httpx.AsyncClient:
    """A pooled client: as many connections as requests may be in flight."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(limits=limits, follow_redirects=False)


async def serve_bridge(
    workflows: Mapping[str, Workflow],
    settings: BridgeSettings,
    environ: Mapping[str, str],
    *,
    handle_signals: bool = True,
    on_start: Callable[[], None] | None = None,
) -> None:
    """Serve the HTTP steps of `workflows` until SIGINT/SIGTERM (or the worker is stopped).

    Raises:
        BridgeConfigError: The file's HTTP steps cannot be served (see `collect_routes`).
        pyworker.SettingsError: The payload stores or threshold (settings or environment) are
            invalid.
        pyworker.BrokerError: RabbitMQ cannot be reached.
    """
    routes = collect_routes(workflows, environ)

    def announce() -> None:
        for route in routes.values():
            print(f"bridge: listening on {route.queue} -> {route.target}", flush=True)
        if on_start is not None:
            on_start()

    async with http_client(settings.concurrency) as client:
        worker = build_bridge(routes, settings, client, environ)
        await worker.serve(handle_signals=handle_signals, on_start=announce)
