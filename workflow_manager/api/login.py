"""The web UI's login and logout (only on a manager with an API token).

`POST /ui/login` takes the token from a form and answers with a session cookie
(workflow_manager.api.sessions): never the token, `HttpOnly`, `SameSite=Strict`, `Path=/`,
`Max-Age` the session's length, and over HTTPS `Secure` under the name `__Host-wm_session`.
Wrong logins are throttled per client address (429 with `Retry-After`). `POST /ui/logout`
ends the session it is shown and clears the cookie. `GET /ui/session` tells the UI's pages
whether they are in a session (to show the logout button) and until when.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from workflow_manager.api.access import (
    LOGIN_PATH,
    LOGOUT_PATH,
    Refusal,
    TokenGate,
    session_cookies,
)
from workflow_manager.api.models import ErrorBody
from workflow_manager.api.sessions import COOKIE_NAME, SECURE_COOKIE_NAME, LoginThrottle, Sessions
from workflow_manager.api.token import ApiToken
from workflow_manager.api.ui import page
from workflow_manager.settings import HttpSettings

__all__ = ["install_access", "login_router"]

_FORM = "application/x-www-form-urlencoded"

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


def install_access(app: FastAPI, token: ApiToken, http: HttpSettings) -> None:
    """Gate `app` behind `token` (workflow_manager.api.access) and serve the UI's login and
    logout."""
    sessions = Sessions(token, http.session_ttl_s)
    app.state.sessions = sessions
    app.state.login_throttle = LoginThrottle(http.login_attempts_per_minute)
    app.include_router(login_router)
    app.add_middleware(TokenGate, token=token, sessions=sessions)


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


def _client(request: Request) -> str:
    """The client's address (a trusted proxy's X-Forwarded-For, through uvicorn)."""
    return request.client.host if request.client is not None else "unknown"


def _secure(request: Request) -> bool:
    """True when the request came over HTTPS (or a trusted proxy says it did)."""
    return request.url.scheme == "https"


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
        204: {"description": f"The token is right: the session cookie `{COOKIE_NAME}` is set."},
        400: {"model": ErrorBody, "description": "No form with a `token` field."},
        429: {
            "model": ErrorBody,
            "description": "Too many wrong logins from this address: wait `Retry-After` s.",
            "headers": {"Retry-After": {"schema": {"type": "integer"}}},
        },
    },
    openapi_extra=_LOGIN_DOC,
)
async def login(request: Request) -> Response:
    """Check a token from a form and open a web UI session (an HttpOnly cookie)."""
    token: ApiToken = request.app.state.api_token  # the route is there only with a token
    throttle: LoginThrottle = request.app.state.login_throttle
    sessions: Sessions = request.app.state.sessions
    body = await request.body()
    # From here to the count of a wrong login nothing awaits: concurrent guesses cannot all
    # pass the check before the first of them is counted.
    client = _client(request)
    wait_s = throttle.wait_s(client)
    if wait_s > 0:  # before looking at the token: a throttled guess learns nothing
        retry_after = max(1, math.ceil(wait_s))
        message = (
            f"too many wrong logins from {client} (more than {throttle.per_minute} a minute): "
            f"try again in {retry_after} s"
        )
        headers = {"Retry-After": str(retry_after)}
        return JSONResponse({"error": message}, status_code=429, headers=headers)
    try:
        given = _form_token(request.headers.get("content-type", ""), body)
    except ValueError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    if not token.matches(given):
        throttle.failed(client)
        return Refusal("that is not this manager's API token", wrong_token=True).response()
    throttle.succeeded(client)
    response = Response(status_code=204)
    secure = _secure(request)
    response.set_cookie(
        SECURE_COOKIE_NAME if secure else COOKIE_NAME,
        sessions.open(),
        max_age=int(sessions.ttl_s),
        path="/",
        secure=secure,
        httponly=True,
        samesite="strict",
    )
    return response


@login_router.post(
    LOGOUT_PATH,
    tags=["access"],
    status_code=204,
    response_class=Response,
    responses={204: {"description": "The session shown (if any) is over; its cookie cleared."}},
)
async def logout(request: Request) -> Response:
    """End the web UI session this request shows, and clear its cookie."""
    sessions: Sessions = request.app.state.sessions
    for cookie in session_cookies(request):
        sessions.end(cookie)
    response = Response(status_code=204)
    response.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict")
    if _secure(request):  # a __Host- cookie is set (and so cleared) only over HTTPS
        response.delete_cookie(
            SECURE_COOKIE_NAME, path="/", secure=True, httponly=True, samesite="strict"
        )
    return response


@login_router.get("/ui/session", include_in_schema=False)
async def session(request: Request) -> dict[str, Any]:
    """The web UI's session: `expires_at` (seconds since the epoch), null when the request
    showed the token in a header rather than a session cookie."""
    sessions: Sessions = request.app.state.sessions
    ends = [sessions.expires_at(cookie) for cookie in session_cookies(request)]
    return {"expires_at": max((e for e in ends if e is not None), default=None)}
