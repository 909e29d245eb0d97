"""The `rig` fixture: one test's manager (killable and restartable on the same journal and
queue), its chaos workers, and a robust AMQP client; every queue is deleted at the end.

Each test runs twice, on a SQLite journal and on a PostgreSQL one (a fresh database, dropped at
the end): `journal_kind` is parametrised here, and a module whose tests are about SQLite's file
overrides it with a fixture of its own."""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import httpx
import pytest
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection

from tests.pgdatabase import PARAMS, fresh_database
from workflow_manager.transport import manager_queues

from ..harness import Process, free_port
from .helpers import (
    READY_TIMEOUT_S,
    WORKER_STEPS,
    WORKFLOW,
    Outcomes,
    consume_outcomes,
    kill_and_delete,
    publish_trigger,
    start_chaos_worker,
)


@dataclass
class Rig:
    """Processes and names for one test; queue names all start with `prefix`."""

    prefix: str
    amqp_url: str
    tmp: Path
    connection: AbstractRobustConnection
    channel: AbstractRobustChannel
    db: str  # the journal: a SQLite file's path, or a postgresql:// URL
    config: Path
    manager: Process | None = None
    api_url: str = ""
    managers_started: int = 0
    workers: list[Process] = field(default_factory=list)
    queues: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.config.write_text(WORKFLOW.replace("{p}", self.prefix))
        self.queues.update(manager_queues(self.queue))
        self.queues.update(f"{self.prefix}.{step}" for step in WORKER_STEPS)

    @property
    def queue(self) -> str:
        """The manager's (reply) queue."""
        return f"{self.prefix}.wm"

    @property
    def trigger_queue(self) -> str:
        return f"{self.queue}.jobs"

    def serve_args(
        self, db: Path | str | None = None, port: int | None = None, log_level: str = "info"
    ) -> list[str]:
        """`python -m workflow_manager serve ...` for this rig (another `db` for the bad-journal
        tests)."""
        return [
            sys.executable, "-m", "workflow_manager", "serve",
            "--config", str(self.config), "--queue", self.queue, "--amqp-url", self.amqp_url,
            "--db", str(db or self.db), "--port", str(port or free_port()),
            "--log-level", log_level,
        ]  # fmt: skip

    async def start_manager(self, log_level: str = "info") -> Process:
        """Start the manager on the rig's journal and queue (a new port) and wait until ready."""
        assert self.manager is None or self.manager.proc.returncode is not None
        port = free_port()
        self.managers_started += 1
        self.manager = await Process.start(
            f"manager #{self.managers_started}", *self.serve_args(port=port, log_level=log_level)
        )
        await self.manager.wait_for_line(r"consuming replies on", READY_TIMEOUT_S)
        await self.manager.wait_for_line(r"HTTP API on", READY_TIMEOUT_S)
        self.api_url = f"http://127.0.0.1:{port}"
        return self.manager

    async def kill_manager(self) -> int:
        """SIGKILL the manager; returns its exit code (-9 unless it had died already)."""
        assert self.manager is not None
        return await self.manager.stop(signal.SIGKILL)

    async def stop_manager(self) -> int:
        """SIGTERM the manager and wait for a graceful stop; returns its exit code."""
        assert self.manager is not None
        return await self.manager.stop(signal.SIGTERM, timeout_s=30)

    async def start_worker(self, prefetch: int = 50) -> Process:
        """Start a chaos worker process on this rig's queues and wait until it consumes."""
        name = f"worker #{len(self.workers) + 1}"
        worker = await start_chaos_worker(name, self.amqp_url, self.prefix, prefetch)
        self.workers.append(worker)
        return worker

    async def outcome_queue(self) -> Outcomes:
        """A durable queue for outcomes (it survives the broker's restart), being consumed."""
        name = f"{self.prefix}.outcomes"
        self.queues.add(name)
        return await consume_outcomes(self.channel, name)

    async def trigger(
        self, workflow: str, payload: Any, job_id: str, reply_to: str | None = None
    ) -> None:
        """Publish a trigger (confirmed by the broker) as any AMQP client would."""
        await publish_trigger(self.channel, self.trigger_queue, workflow, payload, job_id, reply_to)

    async def get_job(self, job_id: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.api_url, timeout=10) as http:
            response = await http.get(f"/api/job/{job_id}")
        assert response.status_code == 200, f"GET /api/job/{job_id}: {response.text}"
        return response.json()

    async def cleanup(self) -> None:
        await kill_and_delete(self, [*self.workers, *([self.manager] if self.manager else [])])


@pytest.fixture(params=PARAMS)
def journal_kind(request: pytest.FixtureRequest) -> str:
    """Which journal the rig's manager runs on: "sqlite" or "postgresql"."""
    return request.param


@pytest.fixture
def journal_db(journal_kind: str, tmp_path: Path) -> Iterator[str]:
    """The rig's --db: a file in tmp_path, or a fresh PostgreSQL database's URL."""
    if journal_kind == "sqlite":
        yield str(tmp_path / "wm.db")
        return
    with fresh_database() as url:
        yield url


@pytest.fixture
async def rig(amqp_url: str, unique: str, tmp_path: Path, journal_db: str) -> AsyncIterator[Rig]:
    connection = await aio_pika.connect_robust(amqp_url)
    channel = await connection.channel()
    rig = Rig(
        unique, amqp_url, tmp_path, connection, channel, journal_db, tmp_path / "workflows.yaml",
    )  # fmt: skip
    try:
        yield rig
    finally:
        await rig.cleanup()
        await connection.close()
