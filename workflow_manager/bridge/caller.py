"""One HTTP step request: send the step input as JSON, turn the answer into the step output.

`interpret` is pure (status and body in, output or a named error out); `HttpStep` is the
pyworker handler that sends the request with a shared, pooled httpx client.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from pyworker import StepContext
from workflow_manager.bridge.errors import HttpBodyError, HttpStatusError, HttpTransportError
from workflow_manager.bridge.routes import Route

__all__ = ["HttpStep", "interpret", "body_preview", "request_headers"]

_PREVIEW_CHARS = 200


def body_preview(body: bytes, limit: int = _PREVIEW_CHARS) -> str:
    """The start of a response body as one line of text, for error messages."""
    text = " ".join(body.decode("utf-8", errors="replace").split())
    return repr(text if len(text) <= limit else text[:limit] + "...") if text else "(empty body)"


def interpret(target: str, status: int, reason: str, body: bytes) -> dict[str, Any]:
    """The step output for an answer: a 2xx JSON object (an empty body is `{}`).

    Raises:
        HttpStatusError: The status is not 2xx.
        HttpBodyError: The body is not JSON, or not a JSON object.
    """
    answered = f"{target} answered {status}{f' {reason}' if reason else ''}"
    if not 200 <= status < 300:
        raise HttpStatusError(f"{answered}: {body_preview(body)}")
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        preview = body_preview(body)
        raise HttpBodyError(f"{answered} with a body that is not JSON: {preview}") from None
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise HttpBodyError(
            f"{answered} with a JSON {kind}, not an object: {body_preview(body)} "
            "(an HTTP step's answer is its output: a JSON object)"
        )
    return value


def request_headers(route: Route, ctx: StepContext) -> dict[str, str]:
    """The step's headers plus the request's metadata (an endpoint may use them to dedupe)."""
    return {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-WM-Job-Id": ctx.job_id,
        "X-WM-Step": ctx.step,
        "X-WM-Attempt": str(ctx.attempt),
        "X-WM-Workflow": ctx.workflow or "",
        **route.headers,
    }


class HttpStep:
    """The handler of one HTTP step queue: one request per step request, at most N at once."""

    def __init__(self, route: Route, client: httpx.AsyncClient, slots: asyncio.Semaphore) -> None:
        self.route = route
        self._client = client
        self._slots = slots

    def __repr__(self) -> str:
        return f"<HttpStep {self.route.queue} -> {self.route.target}>"

    async def __call__(self, data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        """Send `data` to the step's URL and return the JSON object it answers."""
        call = self.route.call
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        try:
            async with self._slots:
                response = await self._client.request(
                    call.method,
                    call.url,
                    content=body,
                    headers=request_headers(self.route, ctx),
                    timeout=call.timeout,
                )
        except httpx.TimeoutException:
            raise HttpTransportError(
                f"{self.route.target}: no answer within {call.timeout:g}s (the step's http.timeout)"
            ) from None
        except httpx.HTTPError as exc:
            detail = self.route.redact(str(exc) or type(exc).__name__)
            raise HttpTransportError(f"{self.route.target} failed: {detail}") from None
        try:
            return interpret(
                self.route.target, response.status_code, response.reason_phrase, response.content
            )
        except (HttpStatusError, HttpBodyError) as exc:
            # The body may echo what it was sent: the secrets must not reach the logs.
            raise type(exc)(self.route.redact(str(exc))) from None
