"""Running the manager as a service: the orchestrator plus the HTTP API, until a signal."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workflow_manager import collector
from workflow_manager.api.token import ApiToken
from workflow_manager.config import Workflow
from workflow_manager.config.webhooks import Webhook
from workflow_manager.errors import ManagerError
from workflow_manager.events import EventHub
from workflow_manager.metrics import Metrics
from workflow_manager.observers import Observer
from workflow_manager.orchestrator import ManagerSettings
from workflow_manager.settings import HttpSettings, advertised_url
from workflow_manager.term import Term, TermParts, rejoin, rejoin_cause, start_term
from workflow_manager.webhooks import resolve_secrets

if TYPE_CHECKING:
    from workflow_manager.traces.export import SpanRecorder

__all__ = ["serve", "listen", "run"]

log = logging.getLogger(__name__)


def listen(host: str, port: int) -> socket.socket:
    """Bind and listen up front, so a taken port is a clear error before anything starts."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening now, not when uvicorn's task first runs: a client told "HTTP API on" may
        # connect at once, and its connection waits in the backlog instead of being refused.
        sock.listen(2048)
    except OSError as exc:
        raise ManagerError(
            f"cannot listen for HTTP on {host}:{port}: {exc.strerror or exc}"
        ) from exc
    return sock


def _loopback(sock: socket.socket) -> bool:
    """True when `sock` is bound to a loopback address: only this host can reach it."""
    try:
        return ipaddress.ip_address(sock.getsockname()[0]).is_loopback
    except ValueError:
        return False


def _span_recorder(environ: Mapping[str, str]) -> SpanRecorder | None:
    """The span exporter when OTEL_EXPORTER_OTLP_ENDPOINT is set (else no SDK is imported)."""
    if not environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    try:
        from workflow_manager.traces.export import span_recorder_from_env
    except ImportError as exc:
        raise ManagerError(
            f"OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OpenTelemetry SDK cannot be imported "
            f"({exc}); install it with pip install 'workflow-manager[otel]', or unset the variable"
        ) from exc
    return span_recorder_from_env(environ)


async def _close_spans(spans: SpanRecorder | None) -> None:
    """Export the spans still buffered (network I/O, so off the loop) and stop exporting."""
    if spans is not None:
        await asyncio.to_thread(spans.close)


def run(main: Coroutine[Any, Any, None], event_loop: str = "auto") -> None:
    """Run `main` to the end on uvloop ("auto": where it is installed) or asyncio's own loop.

    uvloop cuts the event loop's own CPU per message (bench/README.md).
    """
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if event_loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if event_loop == "uvloop":
                main.close()
                raise ManagerError(
                    "--loop uvloop: uvloop is not installed (pip install uvloop)"
                ) from None
        else:
            factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


async def serve(
    workflows: Mapping[str, Workflow],
    settings: ManagerSettings,
    db: str,
    host: str,
    port: int,
    stop: asyncio.Event | None = None,
    api_token: ApiToken | None = None,
    environ: Mapping[str, str] | None = None,
    http: HttpSettings | None = None,
    webhooks: Sequence[Webhook] = (),
) -> None:
    """Run until SIGINT/SIGTERM (or `stop` is set): stop consuming, finish in hand, close.

    With `api_token`, the HTTP API asks every client but the probes for it. `http`: the HTTP
    server's limits and browser-session settings (defaults: `HttpSettings()`). With
    OTEL_EXPORTER_OTLP_ENDPOINT in `environ` (default: the process's), it exports spans.
    `webhooks`: the sources `POST /hooks/{name}` serves, their secrets read from `environ`
    now (WebhookConfigError, before anything starts, when one is not set).

    Raises the journal's error if the journal fails while running (after a clean stop).
    """
    stop = stop or asyncio.Event()
    http = http or HttpSettings()
    environ = os.environ if environ is None else environ
    sources = resolve_secrets(webhooks, environ)  # a missing secret stops the start here
    spans = _span_recorder(environ)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sock = listen(host, port)
    if api_token is None and not _loopback(sock):
        log.warning(
            "the HTTP API listens on %s:%d with no API token: anyone who can reach it can start, "
            "cancel and read jobs; set --api-token or WM_API_TOKEN", host, port,
        )  # fmt: skip
    api_url = settings.advertise_url or advertised_url(host, port)
    metrics = Metrics(workflows)
    events = EventHub()
    observers: list[Observer] = [metrics, events, *([spans] if spans is not None else [])]
    collector.tune()
    parts = TermParts(workflows, settings, db, api_url, metrics, events, observers)
    try:
        term = await start_term(parts)
    except BaseException:
        sock.close()
        raise
    try:
        # Imported once the manager consumes: a restart takes its queues back sooner
        # (workflow_manager.api.serving).
        from workflow_manager.api.serving import start_http_api

        api = start_http_api(
            term.orchestrator, sock, settings=settings, http=http, host=host, api_url=api_url,
            api_token=api_token, metrics=metrics, events=events, webhook_sources=sources,
        )  # fmt: skip
    except BaseException:
        await term.stop(events)
        sock.close()
        raise
    collector.freeze()  # what the start built and imported (recovery froze its own) lives on
    access = "; every route but the probes needs the API token" if api_token else ""
    log.info("serving %d workflows; HTTP API on http://%s:%d%s", len(workflows), host, port, access)
    waiter = asyncio.create_task(stop.wait())
    running: Term | None = term
    failure: BaseException | None = None
    while running is not None:
        failed = asyncio.create_task(running.orchestrator.failed.wait())
        await asyncio.wait({api.serving, waiter, failed}, return_when=asyncio.FIRST_COMPLETED)
        failed.cancel()
        if stop.is_set() or api.serving.done() or not running.rejoins:
            break
        log.warning("rejoining as a standby: %s", running.orchestrator.failure)
        metrics.rejoined(rejoin_cause(running.orchestrator.failure))
        await running.stop(events)
        running = await rejoin(stop, parts)
        if running is not None:
            api.answer_for(running.orchestrator)
    log.info("shutting down")
    api.stop()
    events.close()  # open event streams end, or the HTTP server would wait for them
    if running is not None:
        await running.stop(events)
        failure = running.orchestrator.failure
    await _close_spans(spans)
    await api.closed()
    waiter.cancel()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(sig)
    if failure is not None:
        raise failure
