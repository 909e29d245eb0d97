"""A raw HTTP/1.1 client over a TCP socket, for tests that must send what no library would:
a request a byte at a time, a body past its limit in chunks, thousands of open streams."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Answer:
    """A response's status, headers (names in lower case) and the body read so far."""

    status: int
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class RawConnection:
    """One TCP connection to the manager's HTTP port."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    host: str = field(default="127.0.0.1")

    @classmethod
    async def open(cls, api_url: str) -> RawConnection:
        parts = urlsplit(api_url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer, f"{parts.hostname}:{parts.port}")

    def head(self, method: str, target: str, *headers: str) -> bytes:
        """A request line and headers (with Host), ready to send."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}", *headers, "", ""]
        return "\r\n".join(lines).encode()

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self, timeout_s: float = 10.0, body: bool = True) -> Answer:
        """The next response's head, and its body (by Content-Length) when `body`."""
        async with asyncio.timeout(timeout_s):
            raw = await self.reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            answer = Answer(status, headers)
            if body and "content-length" in headers:
                answer.body = await self.reader.readexactly(int(headers["content-length"]))
            return answer

    async def closed_by_peer(self, timeout_s: float = 10.0) -> bytes:
        """Everything the server sends until it closes the connection (fails past timeout_s)."""
        async with asyncio.timeout(timeout_s):
            chunks = []
            try:
                while chunk := await self.reader.read(65536):
                    chunks.append(chunk)
            except ConnectionResetError:
                pass
            return b"".join(chunks)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def manager_rss_bytes(pid: int) -> int:
    """A process's resident memory (Linux /proc)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")
