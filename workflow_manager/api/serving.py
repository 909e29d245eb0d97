"""The HTTP API served: the FastAPI app over the orchestrator, run by uvicorn on a socket.

`workflow_manager.server` imports this module only once the manager consumes its queues:
FastAPI, uvicorn and the routes are a third of what a manager imports, and a restarted manager
takes its work back first. Clients that connect meanwhile wait in the socket's backlog (it
listens from the start), not refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from workflow_manager.api.app import create_app
from workflow_manager.api.connections import limited_protocol
from workflow_manager.api.forwarding import Forwarder
from workflow_manager.api.service import JobService
from workflow_manager.api.token import ApiToken
from workflow_manager.api.webhooks import Webhooks
from workflow_manager.deadletters import DeadLetterQueue
from workflow_manager.events import EventHub
from workflow_manager.metrics import Metrics
from workflow_manager.settings import HttpSettings, ManagerSettings
from workflow_manager.webhooks import Source

__all__ = ["HttpApi", "start_http_api"]


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the service decides the order of shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class HttpApi:
    """The HTTP API being served: its app, the server, the task serving, and how requests
    about other managers' jobs reach them."""

    app: FastAPI
    server: uvicorn.Server
    serving: asyncio.Task[None]
    forwarder: Forwarder

    def answer_for(self, service: JobService) -> None:
        """Answer for `service` from now on (a manager that rejoined has a new orchestrator)."""
        self.app.state.service = service

    def stop(self) -> None:
        """Stop accepting; requests in hand finish (`closed` waits for them)."""
        self.server.should_exit = True

    async def closed(self) -> None:
        """Wait until the server has stopped, then close the forwarder's connections."""
        await self.serving
        await self.forwarder.close()


def start_http_api(
    service: JobService,
    sock: socket.socket,
    *,
    settings: ManagerSettings,
    http: HttpSettings,
    host: str,
    api_url: str,
    api_token: ApiToken | None,
    metrics: Metrics,
    events: EventHub,
    webhook_sources: Mapping[str, Source],
) -> HttpApi:
    """Serve the HTTP API over `service` on the listening `sock` (bound to `host`), as a task.

    `api_url` is the address other managers and clients are told (`--advertise-url`);
    `webhook_sources`: the sources `POST /hooks/{name}` serves, secrets resolved (none: no
    such route).
    """
    forwarder = Forwarder()  # requests about other managers' jobs go to them
    app = create_app(
        service,
        api_token=api_token,
        metrics=metrics,
        events=events,
        dead_letters=DeadLetterQueue(settings.amqp_url, settings.queue),
        forwarder=forwarder,
        http=http,
        max_json_depth=settings.max_json_depth,
        bind_host=host,  # the Host headers answered (workflow_manager.api.hosts)
        advertise_url=api_url,
        webhooks=Webhooks(webhook_sources, metrics.webhook_request) if webhook_sources else None,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=sock.getsockname()[1],
        log_level="warning",
        log_config=None,  # uvicorn's lines go through our handler, in the same format
        lifespan="off",
        # Our h11 protocol: a deadline per request, JSON refusals
        # (workflow_manager.api.connections).
        http=limited_protocol(http),
        h11_max_incomplete_event_size=http.max_header_bytes,  # request line and headers
        # Typed int, used as call_later's delay: a fraction of a second works too.
        timeout_keep_alive=http.idle_timeout_s,  # type: ignore[arg-type]  # (see above)
        # X-Forwarded-Proto/-For believed only from --forwarded-allow-ips (none by default:
        # uvicorn's own default trusts loopback, where any local process could claim HTTPS
        # or another client address, the login throttle's key).
        proxy_headers=bool(http.forwarded_allow_ips),
        forwarded_allow_ips=http.forwarded_allow_ips or "",
    )
    server = _Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]), name="http")
    return HttpApi(app, server, serving, forwarder)
