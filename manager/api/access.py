"""Access to the manager's HTTP server: with an API token set, every route but the probes needs it.

A client shows the token as `Authorization: Bearer TOKEN` (API clients, the CLI) or in the
`wm_token` cookie that `POST /ui/login` sets (the web UI: a browser cannot add a header to a
link). The gate is ASGI middleware, so routes added later (UI pages, streams) are covered
without naming them; only `PUBLIC_PATHS` and the UI's static assets (`PUBLIC_PREFIXES`: no
data in them) are open. A browser asking for a UI page without the token is sent to the login
page (303) rather than shown the API's 401. Tokens are compared in constant time and never
appear in a repr, a log line or an error.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from manager.api.models import ErrorBody
from manager.api.ui import is_ui_path, page

__all__ = [
    "ApiToken",
    "COOKIE_NAME",
    "PUBLIC_PATHS",
    "PUBLIC_PREFIXES",
    "Refusal",
    "TokenGate",
    "document_access",
    "login_router",
]

COOKIE_NAME = "wm_token"
LOGIN_PATH = "/ui/login"
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/metrics", LOGIN_PATH})
"""Open without the token: the probes (orchestrators and scrapers hold no token) and the login."""
PUBLIC_PREFIXES = ("/ui/assets/",)
"""Open without the token too: the UI's scripts and styles, which the login page needs."""

_FORM = "application/x-www-form-urlencoded"
_HOW = "send 'Authorization: Bearer <token>' (the manager's --api-token / WM_API_TOKEN)"


class ApiToken:
    """The shared secret; compared in constant time, shown as `***` in reprs."""

    __slots__ = ("_secret",)

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("an API token cannot be empty")
        self._secret = secret.encode()

    def matches(self, candidate: str | bytes | None) -> bool:
        """True when `candidate` is the token (constant time, whatever its length)."""
        if candidate is None:
            return False
        given = candidate.encode() if isinstance(candidate, str) else candidate
        return hmac.compare_digest(self._secret, given)

    def __repr__(self) -> str:
        return "ApiToken('***')"

    __str__ = __repr__


def _bearer(header: str) -> tuple[str | None, str | None]:
    """(token, None) from an Authorization header, or (None, why it is not a bearer token)."""
    scheme, space, credential = header.strip().partition(" ")
    if scheme.lower() == "bearer" and credential.strip():
        return credential.strip(), None
    # Name the scheme used ("Basic"), never a lone word: it may be the token itself.
    named = scheme.isalpha() and len(scheme) <= 20 and space and credential.strip()
    used = f" (it is a {scheme!r} credential)" if named and scheme.lower() != "bearer" else ""
    return None, f"the Authorization header is not 'Bearer <token>'{used}"


def refusal(token: ApiToken, connection: HTTPConnection) -> Refusal | None:
    """Why the request may not pass, or None when it shows the token."""
    header = connection.headers.get("authorization")
    if header is not None:
        given, malformed = _bearer(header)
        if malformed is not None:
            return Refusal(f"{malformed}; {_HOW}")
        if token.matches(given):
            return None
        return Refusal("the API token in the Authorization header is not this manager's", True)
    cookie = connection.cookies.get(COOKIE_NAME)
    if cookie is not None:
        if token.matches(cookie):
            return None
        message = f"the {COOKIE_NAME} cookie does not hold this manager's API token; log in again"
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
        self, app: ASGIApp, token: ApiToken, public: frozenset[str] = PUBLIC_PATHS
    ) -> None:
        self.app = app
        self.token = token
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # "/metrics/" too: a mounted metrics app answers there (Starlette redirects to it).
        path = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or self._is_public(path):
            await self.app(scope, receive, send)
            return
        refused = refusal(self.token, HTTPConnection(scope))
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "API token needed"})
        elif _is_page_request(scope):
            await to_login(scope)(scope, receive, send)
        else:
            await refused.response()(scope, receive, send)

    def _is_public(self, path: str) -> bool:
        return path.rstrip("/") in self.public or path.startswith(PUBLIC_PREFIXES)


def _is_page_request(scope: Scope) -> bool:
    """A browser loading a UI page (not an asset, not the API): it is shown the login page."""
    return is_ui_path(scope.get("path", "")) and scope.get("method") in ("GET", "HEAD")


def to_login(scope: Scope) -> RedirectResponse:
    """303 to the login page, which comes back to the page asked for once logged in."""
    path: str = scope.get("path", "/")
    query = scope.get("query_string", b"").decode("latin-1")
    wanted = path if path.startswith("/ui/") else "/ui/"
    if query and wanted == path:
        wanted += "?" + query
    return RedirectResponse(f"{LOGIN_PATH}?next={quote(wanted, safe='')}", status_code=303)


# -- the UI's login ------------------------------------------------------------------------

login_router = APIRouter()

_LOGIN_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            _FORM: {
                "schema": {
                    "type": "object",
                    "properties": {"token": {"type": "string", "minLength": 1}},
                    "required": ["token"],
                }
            }
        },
    }
}


def _form_token(content_type: str, body: bytes) -> str:
    """The `token` field of a url-encoded form; ValueError saying what is wrong otherwise."""
    if content_type.split(";")[0].strip().lower() != _FORM:
        raise ValueError(f"send the token as a form ({_FORM}), got {content_type or 'no type'!r}")
    try:
        fields = parse_qs(body.decode(), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise ValueError("the form is not UTF-8") from None
    values = fields.get("token") or []
    if len(values) != 1 or not values[0]:
        raise ValueError("the form needs exactly one non-empty field 'token'")
    return values[0]


@login_router.get(
    LOGIN_PATH,
    tags=["access"],
    response_class=HTMLResponse,
    responses={200: {"description": "The web UI's login page: a form that posts the token."}},
)
async def login_page() -> Response:
    """The web UI's page asking for the token; it returns to `?next=` (a /ui/ page) once in."""
    return page("login.html")


@login_router.post(
    LOGIN_PATH,
    tags=["access"],
    status_code=204,
    response_class=Response,
    responses={
        204: {"description": "The token is right: the `wm_token` cookie is set."},
        400: {"model": ErrorBody, "description": "No form with a `token` field."},
    },
    openapi_extra=_LOGIN_DOC,
)
async def login(request: Request) -> Response:
    """Check a token from a form and keep it in an HttpOnly cookie, for the web UI."""
    token: ApiToken = request.app.state.api_token  # the route is there only with a token
    try:
        given = _form_token(request.headers.get("content-type", ""), await request.body())
    except ValueError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    if not token.matches(given):
        return Refusal("that is not this manager's API token", wrong_token=True).response()
    response = Response(status_code=204)
    response.set_cookie(COOKIE_NAME, given, httponly=True, samesite="strict", path="/")
    return response


# -- the OpenAPI document ------------------------------------------------------------------

_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorBody"}


def document_access(schema: dict[str, Any], token_set: bool) -> None:
    """Say in the OpenAPI `schema` which operations need the token, and their 401 answer."""
    if not token_set:
        return
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            responses: dict[str, Any] = operation.setdefault("responses", {})
            if path == LOGIN_PATH:
                if method == "post":  # the login page (GET) is answered to anyone
                    responses["401"] = _unauthorized_doc("The token is not this manager's.")
            elif path not in PUBLIC_PATHS:
                responses["401"] = _unauthorized_doc("The API token is missing or wrong.")
    schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
    schemes["bearer"] = {"type": "http", "scheme": "bearer", "description": "--api-token"}
    schemes["cookie"] = {
        "type": "apiKey",
        "in": "cookie",
        "name": COOKIE_NAME,
        "description": f"Set by POST {LOGIN_PATH}, for the web UI.",
    }
    schema["security"] = [{"bearer": []}, {"cookie": []}]
    for path in PUBLIC_PATHS & set(schema.get("paths", {})):
        for operation in schema["paths"][path].values():
            operation["security"] = []


def _unauthorized_doc(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
        "content": {"application/json": {"schema": _ERROR_SCHEMA}},
    }
