"""The real orchestrator on the in-memory transport and a real SQLite journal in a temp dir."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator
from workflow_manager.transport import Delivery, Outbound
from workflow_manager.transport.memory import MemoryTransport

WORKFLOWS = """
workflows:
  - name: two
    steps:
      - name: a
      - {name: b, depends: [a]}
  - name: fan
    steps:
      - {name: each, task: per}
    tasks:
      - name: per
        itemListKey: items
        steps:
          - name: work
"""
QUEUE = "wm"


@dataclass
class Rig:
    """An orchestrator, its transport and journal file, and helpers to play workers and senders."""

    orchestrator: Orchestrator
    transport: MemoryTransport
    db: Path

    async def request(self, queue: str, count: int = 1) -> Outbound:
        """The `count`-th message published to `queue` (waiting for it)."""
        await self.transport.wait_for(lambda _: len(self.transport.sent_to(queue)) >= count)
        return self.transport.sent_to(queue)[count - 1]

    def answer(
        self, request: Outbound, body: Any = None, **headers: Any
    ) -> tuple[Delivery, asyncio.Task[None]]:
        """A worker's reply to `request` (body `{}` by default)."""
        raw = json.dumps({} if body is None else body).encode()
        cid = request.correlation_id
        return self.transport.deliver(QUEUE, raw, correlation_id=cid, headers=headers)

    def trigger(
        self, workflow: str, payload: Any, job_id: str | None = None, reply_to: str | None = None
    ) -> tuple[Delivery, asyncio.Task[None]]:
        """A trigger message on the trigger queue."""
        return self.transport.deliver(
            f"{QUEUE}.jobs", json.dumps(payload).encode(), correlation_id=job_id,
            reply_to=reply_to, headers={"workflow": workflow},
        )  # fmt: skip


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Rig]]]:
    """Start an orchestrator (again, on the same journal file, each call); stopped after."""
    running: list[Orchestrator] = []

    async def make(text: str = WORKFLOWS, **settings: Any) -> Rig:
        for orchestrator in running:
            await orchestrator.stop()
        running.clear()
        db = tmp_path / "wm.db"
        transport = MemoryTransport()
        orchestrator = Orchestrator(
            parse_workflows(text),
            ManagerSettings(queue=QUEUE, **settings),
            await open_journal(db),
            transport,
        )
        await orchestrator.start()
        running.append(orchestrator)
        return Rig(orchestrator, transport, db)

    yield make
    for orchestrator in running:
        await orchestrator.stop()
