"""Cross-site request forgery: a request that changes something must come from the manager's
own pages, or from no page at all.

`SameOrigin` is ASGI middleware over every state-changing request (any method but GET, HEAD,
OPTIONS and TRACE), with or without an API token:

* a foreign `Origin` (or, with none, a foreign `Referer`) is refused with 403. Foreign: not
  the request's own scheme://host:port (its scheme as uvicorn saw it, its `Host` header).
  Requests with neither (curl, the CLI, another manager forwarding) pass: a browser sends
  `Origin` on every cross-origin POST, PUT, PATCH and DELETE;
* a body must be `Content-Type: application/json` (415 otherwise), and a request that names
  another type is refused even with no body. A browser cannot send JSON to another origin
  without asking first (a CORS preflight, which the manager never grants), so a page
  elsewhere cannot forge one; a form or `text/plain` body it can send is refused. A request
  with no body and no Content-Type (`curl -X POST .../retry`) passes: nothing in it can be
  forged, and a browser's would carry its `Origin`.

The login (`POST /ui/login`) takes a form, so only its origin is checked.

Webhooks (`POST /hooks/...`, `SIGNED_PREFIXES`) are not checked at all: their senders are
servers (no Origin, and GitHub may send a form), and each request must carry an HMAC
signature under a secret no page can know (workflow_manager.webhooks), checked before anything
is done. A page that forges the request cannot forge that, so the guard has nothing to add.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "SAFE_METHODS",
    "SIGNED_PREFIXES",
    "SameOrigin",
    "Endpoint",
    "endpoint_of",
    "request_endpoint",
]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
SIGNED_PREFIXES = ("/hooks/",)
"""Paths whose requests carry a signature the route checks (webhooks): no token, no guard here."""
_JSON = "application/json"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_PROXY_HINT = (
    " (behind a proxy: it must pass the Host header on, and its address must be in "
    "--forwarded-allow-ips so that its X-Forwarded-Proto is believed)"
)


class Endpoint(NamedTuple):
    """scheme, host and port: what makes an origin."""

    scheme: str
    host: str
    port: int | None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}" + (f":{self.port}" if self.port is not None else "")


def endpoint_of(url: str) -> Endpoint | None:
    """The origin of `url` (an `Origin` or `Referer` value); None when it has none ("null")."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not scheme or not parts.hostname:
        return None
    return Endpoint(scheme, parts.hostname.lower().rstrip("."), port or _DEFAULT_PORTS.get(scheme))


def request_endpoint(scope: Scope, headers: Headers) -> Endpoint | None:
    """The origin this request was sent to: its scheme and its `Host` (or the server address)."""
    scheme = str(scope.get("scheme", "http")).lower()
    host = headers.get("host")
    if host is None:
        server = scope.get("server")
        if not server:
            return None
        host = f"[{server[0]}]:{server[1]}" if ":" in server[0] else f"{server[0]}:{server[1]}"
    return endpoint_of(f"{scheme}://{host}")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class SameOrigin:
    """ASGI middleware: refuse state-changing requests from another origin (403) or with a
    body that is not JSON (415); `form_paths` take a url-encoded form instead (the login)."""

    def __init__(self, app: ASGIApp, form_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.form_paths = form_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method", "GET") in SAFE_METHODS
            # Safe only because the webhook route refuses any request whose signature does
            # not hold (401) before it reads the body as anything (module docstring).
            or str(scope.get("path", "")).startswith(SIGNED_PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refused = self._foreign(scope, headers)
        if refused is None and scope.get("path") not in self.form_paths:
            refused = self._not_json(scope, headers)
        if refused is None:
            await self.app(scope, receive, send)
        else:
            await refused(scope, receive, send)

    @staticmethod
    def _foreign(scope: Scope, headers: Headers) -> JSONResponse | None:
        """403 when the page that sent this request is of another origin."""
        origin = headers.get("origin")
        named, claimed = ("Origin", origin) if origin is not None else ("Referer", None)
        if claimed is None:
            claimed = headers.get("referer")
            if claimed is None:
                return None  # no page sent it: curl, the CLI, another manager
        sender = endpoint_of(claimed)
        own = request_endpoint(scope, headers)
        if sender is not None and sender == own:
            return None
        hint = _PROXY_HINT if sender is not None and own is not None else ""
        shown = str(sender) if sender is not None else "an opaque origin ('null')"
        method = scope.get("method", "POST")
        return _error(
            403,
            f"{method} {scope.get('path', '')} refused: its {named} header says it comes "
            f"from {shown}, not from this manager ({own}); a page of another site cannot "
            f"change anything here{hint}",
        )

    @staticmethod
    def _not_json(scope: Scope, headers: Headers) -> JSONResponse | None:
        """415 when the request carries (or names) a body that is not JSON."""
        content_type = headers.get("content-type")
        if content_type is None:
            has_body = headers.get("content-length", "0").strip() not in ("", "0")
            if not has_body and "transfer-encoding" not in headers:
                return None
            given = "a body with no Content-Type"
        else:
            media_type = content_type.split(";")[0].strip().lower()
            if media_type == _JSON:
                return None
            given = f"Content-Type {media_type or content_type!r}"
        method = scope.get("method", "POST")
        return _error(
            415,
            f"{method} {scope.get('path', '')} takes JSON: send 'Content-Type: {_JSON}' "
            f"(got {given})",
        )
