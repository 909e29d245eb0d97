"""Error responses: every failure answers `{"error": "<what was wrong>"}` with a fitting status.

HTTPException (ours and Starlette's 404/405)  its status
RequestValidationError (e.g. ?interval=abc)   400, not FastAPI's default 422
UnknownWorkflow, InvalidFork (no such step)   404
DuplicateJob                                  409
other SubmitError (payload, job id)           400
JobNotFound (cancel, retry)                   404
JobConflict (cancel a finished job, ...)      409
BrokerError                                   503
NotOwner (another manager runs the job)       its owner's answer, or 503 (see
                                              workflow_manager.api.forwarding)
MessageFailed (the barrier refused it)        422 when the journal cannot hold it, else 500
anything else                                 500, details left to the server log
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, cast

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ExceptionHandler

from workflow_manager.errors import (
    BatchRefused,
    BrokerError,
    DuplicateJob,
    DuplicateKey,
    InvalidFork,
    JobConflict,
    JobNotFound,
    MessageFailed,
    NotOwner,
    SubmitError,
    UnknownWorkflow,
)


class _Answers(Protocol):
    """What a NotOwner needs of `workflow_manager.api.forwarding.Forwarder` (named here as a
    protocol: forwarding answers its own errors with this module's `error_response`)."""

    async def answer(self, request: Request, exc: NotOwner, directory: Any) -> Response: ...


__all__ = ["install_error_handlers", "unknown_workflow", "error_response", "validation_message"]

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Exception)

_SUBMIT_STATUS: dict[type[SubmitError], int] = {
    UnknownWorkflow: 404,
    InvalidFork: 404,  # a fork from a step its workflow does not have
    DuplicateJob: 409,
    DuplicateKey: 409,
}


def error_response(status_code: int, message: str, headers: Any = None) -> JSONResponse:
    """The one shape of every error answer."""
    return JSONResponse({"error": message}, status_code=status_code, headers=headers)


def unknown_workflow(name: str, known: Iterable[str]) -> HTTPException:
    """A 404 naming the workflow, listing the known ones and suggesting the closest."""
    names = sorted(known)
    hint = difflib.get_close_matches(name, names, n=1)
    suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
    listed = ", ".join(names) or "none"
    return HTTPException(
        status_code=404, detail=f"unknown workflow '{name}' (known: {listed}){suggestion}"
    )


def _allowed_methods(request: Request, routes: Sequence[BaseRoute], allow: str) -> str:
    """Methods of every route on this path: Starlette's `Allow` names only the first route's."""
    methods = {m.strip() for m in allow.split(",") if m.strip()}
    for route in routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def _http_error_handler(
    routes: Sequence[BaseRoute],
) -> Callable[[Request, StarletteHTTPException], Awaitable[Response]]:
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message, headers = str(exc.detail), dict(exc.headers or {})
        path = request.url.path
        if exc.status_code == 404 and exc.detail == "Not Found":
            message = f"no route {request.method} {path}; the API is described at /docs"
        elif exc.status_code == 405 and exc.detail == "Method Not Allowed":
            headers["Allow"] = _allowed_methods(request, routes, headers.get("Allow", ""))
            message = f"{request.method} is not allowed on {path} (allowed: {headers['Allow']})"
        return error_response(exc.status_code, message, headers or None)

    return on_http_error


def _where(loc: tuple[Any, ...]) -> str:
    kinds = {"query": "query parameter", "path": "path parameter", "header": "header"}
    if len(loc) >= 2 and loc[0] in kinds:
        return f"{kinds[loc[0]]} '{loc[1]}'"
    return ".".join(str(part) for part in loc) or "request"


def validation_message(errors: Iterable[dict[str, Any]]) -> str:
    """FastAPI's validation errors as one line: where, what, and the value given."""
    parts = []
    for error in errors:
        loc = tuple(error.get("loc", ()))
        got = f" (got {error['input']!r})" if loc[:1] != ("body",) and "input" in error else ""
        parts.append(f"{_where(loc)}: {error.get('msg', 'invalid')}{got}")
    return "; ".join(parts) or "invalid request"


async def _on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_response(400, validation_message(exc.errors()))


async def _on_submit_error(request: Request, exc: SubmitError) -> JSONResponse:
    status = next((s for t, s in _SUBMIT_STATUS.items() if isinstance(exc, t)), 400)
    if isinstance(exc, DuplicateKey):
        # Which job has the key, so the caller can follow that one instead.
        return JSONResponse({"error": str(exc), "job": exc.job_id}, status_code=status)
    return error_response(status, str(exc))


async def _on_job_not_found(request: Request, exc: JobNotFound) -> JSONResponse:
    return error_response(404, str(exc))


async def _on_job_conflict(request: Request, exc: JobConflict) -> JSONResponse:
    return error_response(409, str(exc))


async def _on_broker_error(request: Request, exc: BrokerError) -> JSONResponse:
    return error_response(503, f"RabbitMQ is unavailable: {exc}")


async def _on_not_owner(request: Request, exc: NotOwner) -> Response:
    # The manager running the job answers (workflow_manager.api.forwarding), or 503 says why not.
    forwarder: _Answers = request.app.state.forwarder
    return await forwarder.answer(request, exc, request.app.state.service.directory)


async def _on_message_failed(request: Request, exc: MessageFailed) -> JSONResponse:
    """The barrier refused the request: nothing of it was kept and the manager goes on.

    422 when the journal could not hold what the request carried (the request's fault), else
    500 (ours). Logged once here, with the traceback of what went wrong."""
    log.error("%s %s refused: %s", request.method, request.url.path, exc, exc_info=exc.cause)
    status = 422 if isinstance(exc.cause, BatchRefused) else 500
    return error_response(
        status, f"{exc}; nothing of this request was kept (the manager's log has the details)"
    )


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Starlette re-raises after answering, so the server still logs the traceback.
    return error_response(500, "internal error in workflow-manager; see its log for details")


def install_error_handlers(app: FastAPI, routes: Sequence[BaseRoute]) -> None:
    """Make every error on `app` answer `{"error": ...}` with the status in the module docstring.

    `routes` are the API's own routes, to list every method a path allows in a 405.
    """
    _handle(app, StarletteHTTPException, _http_error_handler(routes))
    _handle(app, RequestValidationError, _on_validation_error)
    _handle(app, SubmitError, _on_submit_error)
    _handle(app, JobNotFound, _on_job_not_found)
    _handle(app, JobConflict, _on_job_conflict)
    _handle(app, NotOwner, _on_not_owner)
    _handle(app, BrokerError, _on_broker_error)
    _handle(app, MessageFailed, _on_message_failed)
    _handle(app, Exception, _on_unexpected)


def _handle(
    app: FastAPI, kind: type[E], handler: Callable[[Request, E], Awaitable[Response]]
) -> None:
    """Answer `kind` with `handler`, the two checked to agree."""
    # Starlette types a handler as taking any Exception; it calls it only with `kind`'s.
    app.add_exception_handler(kind, cast(ExceptionHandler, handler))
