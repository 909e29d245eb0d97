"""DNS rebinding: the manager answers only `Host` headers naming it.

A web page on a name its attacker controls can point that name at 127.0.0.1 after loading;
the browser then sends the page's requests to the manager as same-origin, with the
attacker's name in `Host`. `HostCheck` refuses every Host but the manager's own names
(`HostNames`): the address it is bound to, `localhost`, `127.0.0.1`, `[::1]` (any port),
the host of its `--advertise-url` (other managers of a cluster call it there) and
`--allowed-hosts`.

Bound to a wildcard address (`0.0.0.0`, `::`) the manager is every address of the machine,
which it cannot list in advance: it answers any IP address (a page can only send one as
Host from that very address: no rebinding) and the machine's own name, and a warning at
start says to list the other names clients use with --allowed-hosts. In that list, `*`
answers any Host and `.example.com` a domain and its subdomains.

The probes (`/healthz`, `/readyz`, `/metrics`) answer any Host: orchestrators and scrapers
reach them by names the manager cannot know, they need no token anyway, and hold nothing a
page could use against the manager.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from workflow_manager.settings import WILDCARD_HOSTS

__all__ = ["HostCheck", "HostNames", "host_of", "warn_when_unlisted", "WILDCARD_HOSTS"]

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
PROBES = ("/healthz", "/readyz", "/metrics")


def host_of(value: str) -> str | None:
    """The host name of a `Host` header or an --allowed-hosts entry (no port, lower case,
    IPv6 without brackets); None when it is not one."""
    value = value.strip().lower()
    if value.count(":") > 1 and not value.startswith("["):
        return value  # a bare IPv6 address, as one writes it in --allowed-hosts
    try:
        host = urlsplit(f"//{value}").hostname
    except ValueError:
        return None
    return host.rstrip(".") if host else None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class HostNames:
    """The Host headers a manager answers: `names` exactly, names under `domains`, any IP
    address when `any_address`, anything when `any_host`."""

    names: frozenset[str]
    domains: tuple[str, ...] = ()
    any_address: bool = False
    any_host: bool = False
    listed: bool = False  # --allowed-hosts was given

    @classmethod
    def served(
        cls, bind_host: str, advertise_url: str | None = None, allowed: Iterable[str] = ()
    ) -> HostNames:
        """The names of a manager bound to `bind_host`, advertised at `advertise_url`, with
        the --allowed-hosts entries `allowed`."""
        names = set(LOOPBACK_NAMES)
        wildcard = bind_host.strip() in WILDCARD_HOSTS
        if wildcard:
            names.add(socket.gethostname().lower())
        elif (bound := host_of(bind_host)) is not None:
            names.add(bound)
        if advertise_url and (advertised := urlsplit(advertise_url).hostname):
            names.add(advertised.lower())
        domains: list[str] = []
        any_host = False
        allowed = tuple(allowed)
        for entry in allowed:
            if entry.strip() == "*":
                any_host = True
            elif entry.strip().startswith("."):
                domains.append(entry.strip().lower().rstrip("."))
            elif (host := host_of(entry)) is not None:
                names.add(host)
        listed = bool(allowed)
        return cls(frozenset(names), tuple(domains), wildcard, any_host, listed)

    def allows(self, host: str) -> bool:
        """True when a request whose Host names `host` (no port) is answered."""
        if self.any_host or host in self.names:
            return True
        if any(host == d[1:] or host.endswith(d) for d in self.domains):
            return True
        return self.any_address and _is_address(host)

    def describe(self) -> str:
        """The names answered, for a log line or an error."""
        shown = sorted(self.names) + [f"*{d}" for d in self.domains]
        if self.any_address:
            shown.append("any IP address")
        return ", ".join(shown)


def warn_when_unlisted(names: HostNames) -> None:
    """At start: a manager on every address with no --allowed-hosts says which Host headers
    it answers, and how to add the names its clients use."""
    if names.any_address and not names.listed:
        log.warning(
            "the HTTP API listens on every address: it answers Host headers that are IP "
            "addresses or %s; give the other names clients use to reach it with "
            "--allowed-hosts (or WM_ALLOWED_HOSTS)", names.describe(),
        )  # fmt: skip


class HostCheck:
    """ASGI middleware: answer 400 to a request whose `Host` is not one of `names`."""

    def __init__(self, app: ASGIApp, names: HostNames) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.names.any_host:
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        raw = Headers(scope=scope).get("host")
        if raw is None or path.rstrip("/") in PROBES or path.startswith("/metrics/"):
            await self.app(scope, receive, send)  # HTTP/1.0 without Host: no browser
            return
        host = host_of(raw)
        if host is not None and self.names.allows(host):
            await self.app(scope, receive, send)
            return
        shown = raw[:200]
        message = (
            f"this manager does not answer to the host {shown!r} (it answers "
            f"{self.names.describe()}); if clients reach it by that name, add it to "
            "--allowed-hosts (or WM_ALLOWED_HOSTS)"
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unknown host"})
            return
        await JSONResponse({"error": message}, status_code=400)(scope, receive, send)
