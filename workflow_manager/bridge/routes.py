"""The HTTP steps of a workflow file, resolved for the bridge: one route per queue.

Pure: header values' `${NAME}` references are expanded from an environment mapping passed in,
and the expanded values are kept out of every repr.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from workflow_manager.bridge.errors import BridgeConfigError
from workflow_manager.config.models import ENV_REFERENCE, Flow, HttpCall, Step, Workflow

__all__ = ["Route", "collect_routes", "display_url", "expand_headers"]

MASK = "******"


def display_url(url: str) -> str:
    """`url` without its password and query string (either may hold a secret), for messages."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc += f":{parts.port}"
    if parts.username:
        user = f"{parts.username}:{MASK}" if parts.password else parts.username
        netloc = f"{user}@{netloc}"
    query = "..." if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


@dataclass(frozen=True)
class Route:
    """Where the requests of one queue go: the call, with its headers expanded."""

    queue: str
    where: str  # "workflow 'w', step 's'": the first step that uses this queue
    call: HttpCall
    headers: Mapping[str, str] = field(repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)  # expanded variable values

    @property
    def target(self) -> str:
        """`POST https://host/path`, for logs and messages."""
        return f"{self.call.method} {display_url(self.call.url)}"

    def redact(self, text: str) -> str:
        """`text` with every expanded secret replaced by a mask (e.g. an error body echoing it)."""
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={MASK if ENV_REFERENCE.search(self.call.headers[name]) else value}"
            for name, value in self.headers.items()
        )
        return f"<Route {self.queue} -> {self.target} headers=[{shown}]>"


def expand_headers(
    call: HttpCall, environ: Mapping[str, str], where: str
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The call's headers with `${NAME}` replaced from `environ`, and the values put in.

    Raises:
        BridgeConfigError: A named variable is not set, or empty.
    """
    secrets: list[str] = []

    def value_of(name: str, header: str) -> str:
        value = environ.get(name, "")
        if not value:
            state = "is empty" if name in environ else "is not set"
            raise BridgeConfigError(
                f"{where}: header {header!r} names ${{{name}}}, which {state}; "
                f"export {name}=... before starting the bridge"
            )
        secrets.append(value)
        return value

    def substituted(header: str, template: str) -> str:
        return ENV_REFERENCE.sub(lambda m: value_of(m.group(1), header), template)

    headers = {header: substituted(header, t) for header, t in call.headers.items()}
    return headers, tuple(dict.fromkeys(secrets))


def _steps(workflow: Workflow) -> Iterator[tuple[str, Step]]:
    flows: list[tuple[str, Flow]] = [("", workflow)]
    flows += [(f"task '{task.name}', ", task) for task in workflow.tasks]
    flows += [(f"{kind} ", branch) for kind, branch in workflow.branches.items()]
    for label, flow in flows:
        for step in flow.steps:
            yield f"workflow '{workflow.name}', {label}step '{step.name}'", step


def collect_routes(
    workflows: Mapping[str, Workflow], environ: Mapping[str, str]
) -> dict[str, Route]:
    """A route per queue of the HTTP steps in `workflows`.

    Raises:
        BridgeConfigError: No HTTP steps; a queue shared by steps that differ (two calls, or an
            HTTP step and a worker step); a header variable not set.
    """
    routes: dict[str, Route] = {}
    others: dict[str, str] = {}  # queues of worker steps, for the conflict check
    for workflow in workflows.values():
        for where, step in _steps(workflow):
            if step.http is None:
                if not step.task:
                    others.setdefault(step.queue_name, where)
                continue
            known = routes.get(step.queue_name)
            if known is None:
                headers, secrets = expand_headers(step.http, environ, where)
                routes[step.queue_name] = Route(step.queue_name, where, step.http, headers, secrets)
            elif known.call != step.http:
                raise BridgeConfigError(
                    f"{where}: queue {step.queue_name!r} is also the queue of {known.where}, "
                    "with another http call; give one of them its own `queue:`"
                )
    if not routes:
        raise BridgeConfigError("no HTTP steps to serve: give a step `http: {url: ...}`")
    for queue, route in routes.items():
        if queue in others:
            raise BridgeConfigError(
                f"{route.where}: queue {queue!r} is also the queue of {others[queue]}, which "
                "a worker serves; give the HTTP step its own `queue:`"
            )
    return routes
