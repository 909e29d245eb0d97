"""The HTTP server's connections: uvicorn's h11 protocol with the limits it lacks.

uvicorn gives an idle timeout for kept-alive connections (`timeout_keep_alive`) and a bound on
the request line and headers (h11's `max_incomplete_event_size`), but nothing bounds how long a
client may take to send one request: one that sends a byte a second holds its connection (and
its slot) for as long as it likes. `limited_protocol(settings)` adds that, answering in JSON:

- a request whose headers and body have not all arrived `request_timeout_s` after it began (its
  first byte; a new connection's clock starts when it opens) is answered 408 and closed;
- a request line and headers past `max_header_bytes` are answered 431 (uvicorn: a text 400);
- past `max_connections` open connections (or requests in progress), a request is answered 503
  with `Retry-After` (uvicorn's `limit_concurrency` answers in text, and at one connection less).

The h11 protocol is used whatever is installed: uvicorn's httptools protocol (chosen by
`http="auto"` when httptools is installed) has no bound on the size of a request's headers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from workflow_manager.api.limits import RETRY_AFTER_S, json_error
from workflow_manager.settings import HttpSettings

__all__ = ["limited_protocol"]

log = logging.getLogger(__name__)


class _LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a per-request deadline and JSON refusals (module docstring)."""

    settings: HttpSettings = HttpSettings()

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limit_concurrency = None  # checked by _guarded, which answers in JSON
        self._app = self.app
        self.app = self._guarded
        self._deadline: asyncio.TimerHandle | None = None

    # -- the request deadline ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock: a connection that never sends a whole request is cut off too."""
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """A request's first byte starts its clock; its last stops it."""
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # the whole request is in (or the connection is done with)

    def _arm(self) -> None:
        self._disarm()
        timeout_s = self.settings.request_timeout_s
        self._deadline = self.loop.call_later(timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        """The request did not arrive in time: 408 (if it began and no answer has), close."""
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            return
        began = bool(self.conn.trailing_data[0]) or self.conn.their_state is h11.SEND_BODY
        log.info("closing an HTTP connection from %s: %s", self._peer(), self._slow_message())
        if began:
            self._refuse(408, self._slow_message())
        else:
            self.transport.close()
        if self.cycle is not None and not self.cycle.response_complete:
            # The route reading the body sees the client gone, and sends nothing more.
            self.cycle.disconnected = True
            self.cycle.message_event.set()

    def _slow_message(self) -> str:
        timeout_s = self.settings.request_timeout_s
        return (
            f"the request's headers and body did not arrive within {timeout_s:g} s "
            "(--http-request-timeout)"
        )

    # -- refusals, in JSON ------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse: 431 when its head passed the size limit, else 400."""
        if len(self.conn.trailing_data[0]) > self.settings.max_header_bytes:
            limit = self.settings.max_header_bytes
            self._refuse(
                431,
                f"the request line and headers are over {limit} bytes (--max-header-bytes)",
            )
        else:
            self._refuse(400, "invalid HTTP request: it does not follow HTTP/1.1's syntax")

    def _refuse(self, status: int, message: str) -> None:
        """Answer `{"error": message}` with `status` (unless an answer began), then close."""
        headers, body = json_error(status, message)
        try:
            output = self.conn.send(h11.Response(status_code=status, headers=headers))
            output += self.conn.send(h11.Data(data=body)) or b""
            output += self.conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:  # an answer was under way: closing says enough
            output = b""
        if output:
            self.transport.write(output)
        self.transport.close()

    async def _guarded(self, scope: Any, receive: Any, send: Any) -> None:
        """The app, or a 503 when more connections (or requests) are open than allowed."""
        limit = self.settings.max_connections
        # This connection is counted, and so is this request's task.
        if len(self.connections) > limit or len(self.tasks) > limit:
            log.warning("answering 503: more than %d HTTP connections are open", limit)
            retry = (b"retry-after", str(RETRY_AFTER_S).encode())
            message = (
                f"the manager has {limit} HTTP connections or requests open, its limit "
                "(--max-connections); try again shortly"
            )
            headers, body = json_error(503, message, retry)
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._app(scope, receive, send)

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"


def limited_protocol(settings: HttpSettings) -> type[H11Protocol]:
    """uvicorn's `http` protocol class for these limits (pass it as `uvicorn.Config(http=)`)."""
    return type("LimitedH11Protocol", (_LimitedH11Protocol,), {"settings": settings})
