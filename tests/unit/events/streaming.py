"""An httpx transport that streams an ASGI app's response as it is sent.

httpx's own `ASGITransport` returns a response only once the app has finished it, which an
endless event stream never does. This one returns at `http.response.start`, hands each body
chunk over as it comes, and tells the app the client went (`http.disconnect`) when the
response is closed. With `max_chunks`, a client that does not read holds the app's `send`
once that many chunks wait: a slow client, as a full TCP window makes one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.types import ASGIApp, Message

_DONE = b""


class _Body(httpx.AsyncByteStream):
    def __init__(
        self, chunks: asyncio.Queue[bytes], gone: asyncio.Event, task: asyncio.Task[None]
    ) -> None:
        self._chunks = chunks
        self._gone = gone
        self._task = task

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await self._chunks.get()) is not _DONE:
            yield chunk

    async def aclose(self) -> None:
        self._gone.set()
        while not self._chunks.empty():  # frees a send blocked on a full queue
            self._chunks.get_nowait()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), 5)
        except TimeoutError:
            self._task.cancel()
            raise AssertionError("the app did not end its response after the client went") from None


def _scope(request: httpx.Request) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "scheme": request.url.scheme,
        "path": request.url.path,
        "raw_path": request.url.raw_path.split(b"?")[0],
        "query_string": request.url.query,
        "server": (request.url.host, request.url.port),
        "client": ("127.0.0.1", 123),
        "root_path": "",
    }


class _Exchange:
    """One request's ASGI `receive` and `send`, and what the app has sent so far."""

    def __init__(self, body: bytes, max_chunks: int) -> None:
        self.body: bytes | None = body
        self.started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue(max_chunks)
        self.gone = asyncio.Event()

    async def receive(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def put(self, chunk: bytes) -> None:
        if not self.gone.is_set():
            await self.chunks.put(chunk)

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started.set_result((message["status"], list(message.get("headers", []))))
        elif message["type"] == "http.response.body":
            if message.get("body"):
                await self.put(message["body"])
            if not message.get("more_body", False):
                await self.put(_DONE)


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """Runs each request through `app` on the current loop; the body streams."""

    def __init__(self, app: ASGIApp, max_chunks: int = 0) -> None:
        self.app = app
        self.max_chunks = max_chunks

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = _Exchange(await request.aread(), self.max_chunks)

        async def run() -> None:
            try:
                await self.app(_scope(request), exchange.receive, exchange.send)
            except BaseException as exc:
                if not exchange.started.done():
                    exchange.started.set_exception(exc)
                raise
            finally:
                await exchange.put(_DONE)

        task = asyncio.create_task(run())
        status, headers = await exchange.started
        return httpx.Response(
            status, headers=headers, stream=_Body(exchange.chunks, exchange.gone, task)
        )
