"""Access to the manager's HTTP server: with an API token set, every route but the probes needs it.

A client shows the token as `Authorization: Bearer TOKEN` (API clients, the CLI), or the web
UI's session cookie that `POST /ui/login` sets once it was shown the token (a browser cannot
add a header to a link; the cookie is a signed, expiring session, never the token: see
workflow_manager.api.sessions). The gate is ASGI middleware, so routes added later (UI pages,
streams) are covered without naming them; only `PUBLIC_PATHS` and the UI's static assets
(`PUBLIC_PREFIXES`: no data in them) are open, and webhooks (`SIGNED_PREFIXES`: their
route checks a signature instead, workflow_manager.api.webhooks). A browser asking for a UI
page without the token is sent to the login page (303) rather than shown the API's 401.
Tokens are compared in constant time and never appear in a repr, a log line or an error. The
login's routes are in workflow_manager.api.login.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi.responses import JSONResponse, RedirectResponse
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from workflow_manager.api.origin import SAFE_METHODS, SIGNED_PREFIXES
from workflow_manager.api.sessions import COOKIE_NAME, SECURE_COOKIE_NAME, Sessions
from workflow_manager.api.token import ApiToken
from workflow_manager.api.ui import is_ui_path

__all__ = [
    "ApiToken",
    "COOKIE_NAME",
    "LOGIN_PATH",
    "LOGOUT_PATH",
    "PUBLIC_PATHS",
    "PUBLIC_PREFIXES",
    "Refusal",
    "TokenGate",
    "document_access",
    "session_cookies",
]

LOGIN_PATH = "/ui/login"
LOGOUT_PATH = "/ui/logout"
PUBLIC_PATHS = frozenset(
    {"/healthz", "/readyz", "/metrics", "/metrics/cluster", LOGIN_PATH, LOGOUT_PATH}
)
"""Open without the token: the probes (orchestrators and scrapers hold no token), the login,
and the logout (it ends only the session it is shown, and must work once that is over)."""
PUBLIC_PREFIXES = ("/ui/assets/",)
"""Open without the token too: the UI's scripts and styles, which the login page needs."""

_HOW = "send 'Authorization: Bearer <token>' (the manager's --api-token / WM_API_TOKEN)"


def session_cookies(connection: HTTPConnection) -> list[str]:
    """The session cookies a request carries (the `__Host-` one set over HTTPS first)."""
    found = (connection.cookies.get(name) for name in (SECURE_COOKIE_NAME, COOKIE_NAME))
    return [value for value in found if value]


def _bearer(header: str) -> tuple[str | None, str | None]:
    """(token, None) from an Authorization header, or (None, why it is not a bearer token)."""
    scheme, space, credential = header.strip().partition(" ")
    if scheme.lower() == "bearer" and credential.strip():
        return credential.strip(), None
    # Name the scheme used ("Basic"), never a lone word: it may be the token itself.
    named = scheme.isalpha() and len(scheme) <= 20 and space and credential.strip()
    used = f" (it is a {scheme!r} credential)" if named and scheme.lower() != "bearer" else ""
    return None, f"the Authorization header is not 'Bearer <token>'{used}"


def refusal(token: ApiToken, sessions: Sessions, connection: HTTPConnection) -> Refusal | None:
    """Why the request may not pass, or None when it shows the token or a live session."""
    header = connection.headers.get("authorization")
    if header is not None:
        given, malformed = _bearer(header)
        if malformed is not None:
            return Refusal(f"{malformed}; {_HOW}")
        if token.matches(given):
            return None
        return Refusal("the API token in the Authorization header is not this manager's", True)
    cookies = session_cookies(connection)
    if any(sessions.expires_at(cookie) is not None for cookie in cookies):
        return None
    if cookies:
        message = "the web UI session is over (or is not this manager's); log in again"
        return Refusal(message, True)
    return Refusal(f"this manager needs its API token: {_HOW}")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request may not pass; `wrong_token` when one was shown but it is not ours."""

    message: str
    wrong_token: bool = False

    def response(self) -> JSONResponse:
        """The 401 answer: our error shape, and the challenge RFC 6750 asks for."""
        challenge = 'Bearer realm="workflow-manager"'
        if self.wrong_token:
            challenge += ', error="invalid_token"'
        return JSONResponse(
            {"error": self.message}, status_code=401, headers={"WWW-Authenticate": challenge}
        )


class TokenGate:
    """ASGI middleware: refuse every HTTP request outside `public` that lacks the token."""

    def __init__(
        self,
        app: ASGIApp,
        token: ApiToken,
        sessions: Sessions,
        public: frozenset[str] = PUBLIC_PATHS,
    ) -> None:
        self.app = app
        self.token = token
        self.sessions = sessions
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # "/metrics/" too: a mounted metrics app answers there (Starlette redirects to it).
        path = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or self._is_public(path):
            await self.app(scope, receive, send)
            return
        refused = refusal(self.token, self.sessions, HTTPConnection(scope))
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "API token needed"})
        elif _is_page_request(scope):
            await to_login(scope)(scope, receive, send)
        else:
            await refused.response()(scope, receive, send)

    def _is_public(self, path: str) -> bool:
        # Webhooks (SIGNED_PREFIXES) show a signature instead, which their route checks.
        return path.rstrip("/") in self.public or path.startswith(PUBLIC_PREFIXES + SIGNED_PREFIXES)


def _is_page_request(scope: Scope) -> bool:
    """A browser loading a UI page (not an asset, not the API): it is shown the login page."""
    return is_ui_path(scope.get("path", "")) and scope.get("method") in ("GET", "HEAD")


_GUARD_DOCS = {
    "403": "The request came from a page of another origin (its Origin or Referer header).",
    "415": "The request has a body that is not `Content-Type: application/json`.",
}


def to_login(scope: Scope) -> RedirectResponse:
    """303 to the login page, which comes back to the page asked for once logged in."""
    path: str = scope.get("path", "/")
    query = scope.get("query_string", b"").decode("latin-1")
    wanted = path if path.startswith("/ui/") else "/ui/"
    if query and wanted == path:
        wanted += "?" + query
    return RedirectResponse(f"{LOGIN_PATH}?next={quote(wanted, safe='')}", status_code=303)


# -- the OpenAPI document ------------------------------------------------------------------

_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorBody"}


def document_access(schema: dict[str, Any], token_set: bool) -> None:
    """Say in the OpenAPI `schema` which operations refuse other origins and bodies that are
    not JSON (workflow_manager.api.origin), which need the token, and their 401 answer."""
    _document_same_origin(schema)
    if not token_set:
        return
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            responses: dict[str, Any] = operation.setdefault("responses", {})
            if path == LOGIN_PATH:
                if method == "post":  # the login page (GET) is answered to anyone
                    responses["401"] = _unauthorized_doc("The token is not this manager's.")
            elif path not in PUBLIC_PATHS and not path.startswith(SIGNED_PREFIXES):
                responses["401"] = _unauthorized_doc("The API token is missing or wrong.")
    schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
    schemes["bearer"] = {"type": "http", "scheme": "bearer", "description": "--api-token"}
    schemes["cookie"] = {
        "type": "apiKey",
        "in": "cookie",
        "name": COOKIE_NAME,
        "description": f"A web UI session, set by POST {LOGIN_PATH} (`__Host-{COOKIE_NAME}` "
        "over HTTPS).",
    }
    schema["security"] = [{"bearer": []}, {"cookie": []}]
    open_paths = {p for p in schema.get("paths", {}) if p.startswith(SIGNED_PREFIXES)}
    for path in (PUBLIC_PATHS & set(schema.get("paths", {}))) | open_paths:
        for operation in schema["paths"][path].values():
            operation["security"] = []


def _unauthorized_doc(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
        "content": {"application/json": {"schema": _ERROR_SCHEMA}},
    }


def _document_same_origin(schema: dict[str, Any]) -> None:
    """The 403 and 415 answers of every state-changing operation (the login's form: no 415)."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if method.upper() in SAFE_METHODS or path.startswith(SIGNED_PREFIXES):
                continue
            responses: dict[str, Any] = operation.setdefault("responses", {})
            for status, description in _GUARD_DOCS.items():
                if status == "415" and path == LOGIN_PATH:
                    continue
                responses.setdefault(status, _error_doc(description))


def _error_doc(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _ERROR_SCHEMA}},
    }
