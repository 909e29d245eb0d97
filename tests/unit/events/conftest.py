"""The real orchestrator with an `EventHub` observing it, on the in-memory transport and a real
SQLite journal, behind the real app; clients stream `GET /api/events` as they would over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from workflow_manager.api import create_app
from workflow_manager.config import parse_workflows
from workflow_manager.events import EventHub
from workflow_manager.events.sse import SseMessage, read_events
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator
from workflow_manager.transport import Outbound
from workflow_manager.transport.memory import MemoryTransport

from .streaming import StreamingASGITransport

QUEUE = "wm"
WORKFLOWS = """
workflows:
  - name: flow
    steps:
      - {name: prep, retries: 1, retry_backoff: {initial: 0}}
      - {name: work, depends: [prep]}
  - name: fan
    steps:
      - {name: each, task: per}
    tasks:
      - name: per
        itemListKey: items
        steps:
          - name: job
"""


@dataclass
class Rig:
    """The orchestrator, its transport, its hub, and an HTTP client on its app."""

    orchestrator: Orchestrator
    transport: MemoryTransport
    hub: EventHub
    http: httpx.AsyncClient

    async def request(self, queue: str, count: int = 1) -> Outbound:
        """The `count`-th request published to step queue `queue` (waiting for it)."""
        await self.transport.wait_for(lambda _: len(self.transport.sent_to(queue)) >= count)
        return self.transport.sent_to(queue)[count - 1]

    async def answer(self, request: Outbound, body: Any = None, error: str | None = None) -> None:
        """A worker's reply to `request`, handled through the whole pipeline."""
        headers = {} if error is None else {"x-error": error}
        raw = json.dumps({} if body is None else body).encode()
        _, handled = self.transport.deliver(
            QUEUE, raw, correlation_id=request.correlation_id, headers=headers
        )
        await handled


class Stream:
    """An open `GET /api/events` response, read message by message."""

    def __init__(self, context: Any, response: httpx.Response) -> None:
        self.context = context
        self.response = response
        self._messages = read_events(response.aiter_lines())

    async def close(self) -> None:
        """Disconnect, as a client that goes away."""
        await self.context.__aexit__(None, None, None)

    async def next(self) -> SseMessage:
        """The next message (heartbeat comments are skipped by the reader)."""
        return await anext(self._messages)

    async def take(self, count: int) -> list[SseMessage]:
        """The next `count` messages."""
        return [await self.next() for _ in range(count)]


OpenStream = Callable[..., Awaitable[Stream]]


@pytest.fixture
async def rig_factory(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Rig]]]:
    """Start a rig with hub options (capacity, queue_limit, heartbeat_s); stopped after."""
    made: list[Rig] = []

    async def make(max_chunks: int = 0, **hub_options: Any) -> Rig:
        hub = EventHub(**hub_options)
        transport = MemoryTransport()
        orchestrator = Orchestrator(
            parse_workflows(WORKFLOWS),
            ManagerSettings(queue=QUEUE),
            await open_journal(tmp_path / f"wm{len(made)}.db"),
            transport,
            observers=[hub],
        )
        await orchestrator.start()
        app = create_app(orchestrator, events=hub)
        http = httpx.AsyncClient(
            transport=StreamingASGITransport(app, max_chunks), base_url="http://wm"
        )
        rig = Rig(orchestrator, transport, hub, http)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        rig.hub.close()
        await rig.http.aclose()
        await rig.orchestrator.stop()


@pytest.fixture
async def rig(rig_factory: Callable[..., Awaitable[Rig]]) -> Rig:
    return await rig_factory()


async def open_events(
    http: httpx.AsyncClient, params: dict[str, str] | None = None, last_id: str | None = None
) -> Stream:
    """Open `GET /api/events` (it must answer 200); close it with `Stream.close()`."""
    headers = {"Last-Event-ID": last_id} if last_id is not None else {}
    context = http.stream("GET", "/api/events", params=params or {}, headers=headers)
    response = await context.__aenter__()
    assert response.status_code == 200, (await response.aread()).decode()
    return Stream(context, response)


@pytest.fixture
async def open_stream(rig: Rig) -> AsyncIterator[OpenStream]:
    """Open `GET /api/events` on `rig` with query params and headers; closed after the test."""
    opened: list[Stream] = []

    async def start(params: dict[str, str] | None = None, last_id: str | None = None) -> Stream:
        stream = await open_events(rig.http, params, last_id)
        opened.append(stream)
        return stream

    yield start
    for stream in reversed(opened):
        if not stream.response.is_closed:
            await stream.close()
