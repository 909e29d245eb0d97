"""Size limits on each HTTP request, as ASGI middleware: its URL and its body.

- A path and query string past `max_url_bytes` are answered 414; a request line and headers
  past `max_header_bytes`, 431 (the protocol, workflow_manager.api.connections, bounds what it
  buffers of a head arriving in parts; a head that came whole is measured here).
- A body past `max_body_bytes` is answered 413: at once when its `Content-Length` says so
  (nothing of it is read), else as it streams in (a chunked body), counting each chunk; the
  request never holds more than the limit and one chunk. The answer closes the connection, so
  the rest of the body is not read either.

Every refusal is `{"error": "..."}` naming the limit and its option.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workflow_manager.settings import HttpSettings

__all__ = ["RequestLimits", "BodyTooLarge", "json_error", "RETRY_AFTER_S"]

log = logging.getLogger(__name__)

RETRY_AFTER_S = 1
"""The `Retry-After` (seconds) of a 503 for too many connections or event streams."""


class BodyTooLarge(HTTPException):
    """A request body passed the limit while streaming in: the app's error handler answers 413.

    An HTTPException, so a route reading its body answers it like any other 4xx.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit), headers={"Connection": "close"})


def json_error(
    status: int, message: str, *extra: tuple[bytes, bytes]
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and body of a `{"error": message}` answer that closes the connection."""
    body = json.dumps({"error": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *extra,
    ]
    return headers, body


def _too_large(limit: int) -> str:
    return f"the request body is over {limit} bytes, the limit (--max-body-bytes)"


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value)
    return None


class RequestLimits:
    """Refuse a request whose URL or body is over the limits of `settings` (module docstring)."""

    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the URL and the declared length, then count the body as the app reads it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, message = refusal
            await _answer(send, status, message)
            return
        counter = _BodyCounter(receive, self.settings.max_body_bytes)
        try:
            await self.app(scope, counter.receive, _closing(send, counter))
        except BodyTooLarge as exc:  # read outside a route (a middleware): answered here
            if counter.answered:
                raise
            await _answer(send, 413, str(exc.detail))

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, message) when the URL or the declared body length is over its limit."""
        raw_path = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string") or b""
        size = len(raw_path) + (len(query) + 1 if query else 0)
        limit = self.settings.max_url_bytes
        if size > limit:
            return 414, f"the URL's path and query are {size} bytes, over {limit} (--max-url-bytes)"
        head = size + sum(len(key) + len(value) + 4 for key, value in scope.get("headers") or ())
        if head > self.settings.max_header_bytes:
            # h11 bounds only a head that arrives in parts; one sent whole is checked here.
            limit = self.settings.max_header_bytes
            return 431, f"the request line and headers are over {limit} bytes (--max-header-bytes)"
        declared = _header(scope, b"content-length")
        if declared is None:
            return None
        try:
            length = int(declared)
        except ValueError:
            return 400, f"header 'Content-Length' {declared[:40]!r} is not a number of bytes"
        if length > self.settings.max_body_bytes:
            return 413, _too_large(self.settings.max_body_bytes)
        return None


class _BodyCounter:
    """The app's `receive`, counting body bytes; BodyTooLarge once they pass `limit`."""

    def __init__(self, receive: Receive, limit: int) -> None:
        self._receive = receive
        self._limit = limit
        self._seen = 0
        self.tripped = False
        self.answered = False  # a response began

    async def receive(self) -> Message:
        if self.tripped:
            raise BodyTooLarge(self._limit)
        message = await self._receive()
        if message["type"] == "http.request":
            self._seen += len(message.get("body", b""))
            if self._seen > self._limit:
                self.tripped = True
                log.info("refusing a request body over %d bytes", self._limit)
                raise BodyTooLarge(self._limit)
        return message


def _closing(send: Send, counter: _BodyCounter) -> Send:
    """`send`, noting that an answer began, and closing the connection after a body too large
    (the rest of it is never read)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            counter.answered = True
            if counter.tripped:
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return wrapped


async def _answer(send: Send, status: int, message: str) -> None:
    """A `{"error": message}` answer that closes the connection."""
    headers, body = json_error(status, message)
    start: dict[str, Any] = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})
