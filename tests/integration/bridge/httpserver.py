"""A small HTTP/1.1 server on 127.0.0.1 for the bridge's tests, and an echo endpoint.

Plain asyncio: it reads requests (keep-alive, Content-Length bodies), records them, and answers
with what the test's handler returns. `echo` is the conformance kit's HTTP echo: it answers a
POST with its body, or 500 "asked to fail" when the body has `"fail": true`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["HttpRequest", "HttpResponse", "StubServer", "echo"]


@dataclass(frozen=True)
class HttpRequest:
    """A request as the server read it; header names lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class HttpResponse:
    """What to answer."""

    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"
    reason: str = "OK"


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


async def echo(request: HttpRequest) -> HttpResponse:
    """The body back with 200; 500 "asked to fail" when the body is a JSON object with fail."""
    try:
        data = json.loads(request.body)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("fail") is True:
        return HttpResponse(500, b"asked to fail", "text/plain", "Internal Server Error")
    return HttpResponse(200, request.body)


@dataclass
class StubServer:
    """Serves `handler` on a free port of 127.0.0.1 until `close()`."""

    handler: Handler = echo
    requests: asyncio.Queue[HttpRequest] = field(default_factory=asyncio.Queue)
    _server: asyncio.Server | None = None
    _connections: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> StubServer:
        """Listen on a free port."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    @property
    def port(self) -> int:
        """The port it listens on."""
        assert self._server is not None, "start() the server first"
        return self._server.sockets[0].getsockname()[1]

    def url(self, path: str = "/") -> str:
        """`http://127.0.0.1:<port><path>`."""
        return f"http://127.0.0.1:{self.port}{path}"

    async def close(self) -> None:
        """Stop listening and drop open connections."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        try:
            while (request := await _read_request(reader)) is not None:
                self.requests.put_nowait(request)
                response = await self.handler(request)
                writer.write(_encode(response))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        finally:
            self._connections.discard(writer)
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None  # the connection closed between requests
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return HttpRequest(method, path, headers, body)


def _encode(response: HttpResponse) -> bytes:
    head = (
        f"HTTP/1.1 {response.status} {response.reason}\r\n"
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n\r\n"
    )
    return head.encode("latin-1") + response.body
