"""A TCP proxy in front of the test PostgreSQL that a test can cut and restore: the database
"goes away" for the managers behind it while the shared server keeps serving everyone else."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit


class PgProxy:
    """Forwards 127.0.0.1:`port` to the server of `url`; `cut()` drops every connection and
    refuses new ones until `restore()`."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._url = parts
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        """`url` through the proxy."""
        netloc = self._url.netloc.rsplit("@", 1)
        user = f"{netloc[0]}@" if len(netloc) == 2 else ""
        return self._url._replace(netloc=f"{user}127.0.0.1:{self.port}").geturl()

    async def start(self) -> None:
        """Listen (on the same port again after a cut)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Stop listening and drop every connection, as a database that went away."""
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update({writer, up_writer})
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        self._writers.difference_update({writer, up_writer})


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()
