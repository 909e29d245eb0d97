"""A TCP proxy in front of RabbitMQ that can hold back what its clients send.

With it a test loses a manager's ack for certain: `hold()` once the manager has a reply in
hand, and its ack never reaches the broker; kill the manager, and the broker still sees the
connection open, the reply unacked; `release()` closes that connection, and the broker
delivers the reply again (`redelivered` set), to whichever consumer is there by then.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["HoldProxy"]

_CHUNK = 65536
_CLOSED = (OSError, asyncio.IncompleteReadError)


@dataclass(eq=False)
class _Link:
    """One client connection and the proxy's own connection to the broker for it."""

    client: asyncio.StreamWriter
    broker: asyncio.StreamWriter
    held: bool = False


class HoldProxy:
    """Forwards 127.0.0.1:`port` to the broker of `url`, and can hold back its clients."""

    def __init__(self, url: str) -> None:
        self._parts = urlsplit(url)
        self._target = (self._parts.hostname or "127.0.0.1", self._parts.port or 5672)
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        """The broker's URL, through the proxy."""
        netloc = self._parts.netloc.rsplit("@", 1)
        user = f"{netloc[0]}@" if len(netloc) == 2 else ""
        return self._parts._replace(netloc=f"{user}127.0.0.1:{self.port}").geturl()

    async def start(self) -> None:
        """Listen on a free port."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def hold(self) -> int:
        """From now on, drop what the clients connected so far send (acks included), and keep
        their broker side open when they go away. Later connections pass as before. Returns
        how many connections are held."""
        for link in self._links:
            link.held = True
        return len(self._links)

    def release(self) -> None:
        """Close the broker side of every held connection: the broker takes back what they had
        unacked, and delivers it again."""
        for link in [link for link in self._links if link.held]:
            link.broker.transport.abort()
            link.client.transport.abort()

    async def close(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is not None:
            self._server.close()
        for link in self._links:
            link.broker.transport.abort()
            link.client.transport.abort()
        if self._server is not None:
            await self._server.wait_closed()
        # Every pipe ends with its sockets: wait for them rather than cancel them.
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(task := asyncio.current_task())  # type: ignore[arg-type]
        try:
            broker_reader, broker_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(writer, broker_writer)
        self._links.add(link)
        try:
            await asyncio.gather(_upstream(reader, link), _downstream(broker_reader, link))
        finally:
            self._links.discard(link)
            self._tasks.discard(task)  # type: ignore[arg-type]


async def _upstream(reader: asyncio.StreamReader, link: _Link) -> None:
    """Client to broker: dropped once held; a held link's broker side outlives its client."""
    with contextlib.suppress(*_CLOSED):
        while data := await reader.read(_CHUNK):
            if not link.held:
                link.broker.write(data)
                await link.broker.drain()
    if not link.held:
        link.broker.transport.abort()


async def _downstream(reader: asyncio.StreamReader, link: _Link) -> None:
    """Broker to client; once the client is gone, read on (and drop) until the broker closes."""
    with contextlib.suppress(*_CLOSED):
        while data := await reader.read(_CHUNK):
            if link.client.transport.is_closing():
                continue
            link.client.write(data)
            with contextlib.suppress(*_CLOSED):
                await link.client.drain()
    link.client.transport.abort()
