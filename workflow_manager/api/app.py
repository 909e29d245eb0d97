"""The FastAPI application: `create_app(service)` over anything shaped like `JobService`.

`JobService` and `Clock` live in `workflow_manager.api.service` (so routes can name them without an
import cycle) and are re-exported here.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from workflow_manager import __version__
from workflow_manager.api.access import ApiToken, document_access
from workflow_manager.api.browse import router as browse_router
from workflow_manager.api.bulk import router as bulk_router
from workflow_manager.api.cluster import router as cluster_router
from workflow_manager.api.deadletters import install_dead_letters
from workflow_manager.api.docs import install_docs
from workflow_manager.api.errors import install_error_handlers
from workflow_manager.api.events import install_events
from workflow_manager.api.forks import router as forks_router
from workflow_manager.api.forwarding import Forwarder
from workflow_manager.api.health import router as health_router
from workflow_manager.api.hosts import HostCheck, HostNames, warn_when_unlisted
from workflow_manager.api.joblimits import router as limits_router
from workflow_manager.api.limits import RequestLimits
from workflow_manager.api.login import install_access, login_router
from workflow_manager.api.origin import SameOrigin
from workflow_manager.api.payloads import router as payloads_router
from workflow_manager.api.routes import router
from workflow_manager.api.schedules import router as schedules_router
from workflow_manager.api.scrape import MetricsSource
from workflow_manager.api.scrape import router as metrics_router
from workflow_manager.api.service import Clock, JobService
from workflow_manager.api.signals import router as signals_router
from workflow_manager.api.ui import UiHeaders
from workflow_manager.api.ui import router as ui_router
from workflow_manager.api.webhooks import Webhooks
from workflow_manager.api.webhooks import router as webhooks_router
from workflow_manager.deadletters import DeadLetterQueue
from workflow_manager.events import EventHub
from workflow_manager.limits import DEFAULT_JSON_DEPTH
from workflow_manager.settings import HttpSettings

__all__ = ["ApiToken", "JobService", "Clock", "create_app"]

_DESCRIPTION = """\
Start jobs of the workflows the manager serves, and watch them run.

* `POST /api/workflow/{name}` starts a job; the JSON body is its payload.
* `GET /api/job/{id}` shows a job's steps, result or error; child jobs of task steps too.
* Every error answers `{"error": "..."}` with a 4xx status (5xx only for a manager bug).
* When the manager runs with `--api-token`, every route but `/healthz`, `/readyz`,
  `/metrics`, `/metrics/cluster` and the webhooks (`POST /hooks/{name}`: signed instead) needs
  `Authorization: Bearer <token>` (or the cookie `POST /ui/login` sets).
  The web UI's login page and its static assets (scripts, styles, icon) need none: they hold
  no data, and the login page must load before the token is known.

Paths and field names match the older Go tool's API, so its clients keep working.
"""

_TAGS = [
    {"name": "workflows", "description": "Workflow definitions, and starting jobs."},
    {"name": "jobs", "description": "Running and finished jobs."},
    {"name": "events", "description": "Run events as they happen (Server-Sent Events)."},
    {"name": "schedules", "description": "Workflows' schedules: next firings, pause, resume."},
    {"name": "cluster", "description": "Several managers: partitions, leases, owners."},
    {"name": "dead letters", "description": "Messages the manager could not process, and replay."},
    {"name": "access", "description": "The web UI's login, when the manager has an API token."},
    {"name": "webhooks", "description": "Signed requests from webhook senders: start jobs."},
    {
        "name": "health",
        "description": "Broker connection (`/healthz`), readiness to take work (`/readyz`) "
        "and Prometheus metrics (`/metrics`; the whole cluster's summed: `/metrics/cluster`).",
    },
]


def create_app(
    service: JobService,
    *,
    clock: Clock = time.time,
    api_token: ApiToken | None = None,
    metrics: MetricsSource | None = None,
    events: EventHub | None = None,
    dead_letters: DeadLetterQueue | None = None,
    forwarder: Forwarder | None = None,
    http: HttpSettings | None = None,
    max_json_depth: int = DEFAULT_JSON_DEPTH,
    bind_host: str | None = None,
    advertise_url: str | None = None,
    webhooks: Webhooks | None = None,
) -> FastAPI:
    """The HTTP API over `service`; `clock` gives "now" for elapsed times and `?interval=`.

    With `api_token`, every route but the probes needs it (workflow_manager.api.access). With
    `metrics`, `GET /metrics` serves them (Prometheus text format). `events`: the hub
    observing the orchestrator, served at `GET /api/events`. `dead_letters`: the queue
    served at `/api/dead-letters`. `forwarder`: how a request about a job another manager
    runs reaches that manager (close it when the server stops). `http`: the limits and
    browser-session settings (docs/security.md); `max_json_depth`: the deepest JSON a
    request body may hold. `bind_host` (the address serve() listens on) and `advertise_url`
    name the Host headers it answers, with `http.allowed_hosts` (workflow_manager.api.hosts);
    without `bind_host` (an app served by someone else) every Host is answered. `webhooks`:
    the sources `POST /hooks/{name}` serves (without: no such route).
    """
    app = FastAPI(
        title="workflow-manager",
        description=_DESCRIPTION,
        version=__version__,
        openapi_tags=_TAGS,
        docs_url=None,  # workflow_manager.api.docs serves them with no CDN
        redoc_url=None,
    )
    app.state.service = service
    app.state.clock = clock
    app.state.api_token = api_token
    app.state.forwarder = forwarder or Forwarder()
    app.state.http = http or HttpSettings()
    app.state.max_json_depth = max_json_depth
    routes = [
        *router.routes, *health_router.routes, *browse_router.routes, *login_router.routes,
        *ui_router.routes,
    ]  # fmt: skip
    install_error_handlers(app, routes)
    app.include_router(router)
    app.include_router(health_router)
    app.include_router(signals_router)
    app.include_router(forks_router)
    app.include_router(bulk_router)
    app.include_router(schedules_router)
    app.include_router(limits_router)
    app.include_router(cluster_router)
    app.include_router(browse_router)
    app.include_router(payloads_router)
    app.include_router(
        ui_router
    )  # the web UI (workflow_manager.api.ui), left out of the OpenAPI doc
    install_docs(app)
    if events is not None:
        install_events(app, events)
    if dead_letters is not None:
        install_dead_letters(app, dead_letters)
    if webhooks is not None:
        app.state.webhooks = webhooks
        app.include_router(webhooks_router)
    if api_token is not None:  # without a token there is nothing to log in to
        install_access(app, api_token, app.state.http)
    # Middleware, the last added outermost: Host check, same origin, request limits, UI
    # headers, token gate, routes.
    app.add_middleware(UiHeaders)  # outside the gate: its redirects to the login page get them
    # A URL or body over its limit is refused before any part inside reads it.
    app.add_middleware(RequestLimits, settings=app.state.http)
    # Outside the token gate: a forged request is refused with or without a token.
    app.add_middleware(SameOrigin, form_paths=frozenset({"/ui/login"}))
    if bind_host is not None:  # outermost: an unknown Host is answered nothing else
        names = HostNames.served(bind_host, advertise_url, app.state.http.allowed_hosts)
        warn_when_unlisted(names)
        app.add_middleware(HostCheck, names=names)
    if metrics is not None:
        app.state.metrics = metrics
        app.include_router(metrics_router)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema without the 422 answers it adds to every route (ours answer 400), and
    with the token's security scheme and 401 answers when the manager has one."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
            tags=app.openapi_tags,
        )
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)
        schemas = schema.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        document_access(schema, token_set=app.state.api_token is not None)
        app.openapi_schema = schema
    return app.openapi_schema
