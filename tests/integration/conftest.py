"""Fixtures that run the whole system: a real manager process and real pyworker processes."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aio_pika
import httpx
import pytest

from workflow_manager.config import load_workflows
from workflow_manager.orchestrator import step_queues
from workflow_manager.transport import manager_queues

from .harness import Manager, Process, start_manager, start_worker, take_one


@dataclass
class Outcome:
    """An outcome message from the manager, as a trigger's sender receives it."""

    correlation_id: str | None
    status: str
    body: Any


@dataclass
class System:
    """One test's manager, workers and AMQP client; queue names are unique to the test."""

    prefix: str
    manager: Manager
    workers: list[Process]
    channel: aio_pika.abc.AbstractChannel
    http: httpx.AsyncClient
    config: Path
    db: Path | str  # a SQLite file, or a postgresql:// URL
    amqp_url: str
    manager_args: tuple[str, ...] = ()
    manager_env: dict[str, str] | None = None

    async def restart(self, sig: int = signal.SIGTERM) -> int:
        """Stop the manager (gracefully, or SIGKILL) and start it again on the same journal."""
        code = await self.manager.process.stop(sig)
        self.manager = await start_manager(
            self.config, self.manager.queue, self.amqp_url, self.db,
            extra_args=self.manager_args, env=self.manager_env,
        )  # fmt: skip
        await self.http.aclose()
        self.http = httpx.AsyncClient(base_url=self.manager.api_url, timeout=10)
        return code

    @property
    def trigger_queue(self) -> str:
        return f"{self.manager.queue}.jobs"

    async def reply_queue(self) -> aio_pika.abc.AbstractQueue:
        """A fresh exclusive queue to receive outcome messages on."""
        return await self.channel.declare_queue(exclusive=True)

    async def trigger(
        self,
        workflow: str | None,
        payload: Any,
        job_id: str | None = None,
        reply_to: str | None = None,
        raw: bytes | None = None,
    ) -> None:
        """Publish a trigger the way any AMQP client would, with no project code."""
        headers = {"workflow": workflow} if workflow is not None else {}
        body = raw if raw is not None else json.dumps(payload).encode()
        message = aio_pika.Message(body, headers=headers, correlation_id=job_id, reply_to=reply_to)
        await self.channel.default_exchange.publish(message, self.trigger_queue)

    async def take(self, step_queue: str, timeout_s: float = 20) -> aio_pika.abc.AbstractMessage:
        """Play the worker: take (and ack) the next request on this test's `<prefix>.<queue>`."""
        queue = await self.channel.declare_queue(f"{self.prefix}.{step_queue}", durable=True)
        return await take_one(queue, timeout_s)

    async def answer(
        self, request: aio_pika.abc.AbstractMessage, body: bytes, **headers: Any
    ) -> None:
        """Play the worker: reply to a request, with optional headers (`x-error`, `x-attempt`)."""
        message = aio_pika.Message(body, correlation_id=request.correlation_id, headers=headers)
        await self.channel.default_exchange.publish(message, request.reply_to)

    async def next_outcome(
        self, queue: aio_pika.abc.AbstractQueue, timeout_s: float = 30
    ) -> Outcome:
        """The next outcome message on `queue`."""
        message = await take_one(queue, timeout_s)
        status = (message.headers or {}).get("x-status")
        if isinstance(status, bytes):
            status = status.decode()
        return Outcome(message.correlation_id, str(status), json.loads(message.body))

    async def run(self, workflow: str, payload: Any, job_id: str | None = None) -> Outcome:
        """Trigger a job and wait for its outcome."""
        queue = await self.reply_queue()
        await self.trigger(workflow, payload, job_id or str(uuid.uuid4()), queue.name)
        return await self.next_outcome(queue)

    async def found(self, path: str, deadline_s: float = 15.0) -> Any:
        """GET `path` once it answers 200 (a job made by a trigger appears a moment later)."""
        end = time.monotonic() + deadline_s
        while True:
            response = await self.http.get(path)
            if response.status_code == 200:
                return response.json()
            assert time.monotonic() < end, f"{path} never answered 200: {response.text}"
            await asyncio.sleep(0.05)  # polling the API with a deadline

    async def until(
        self, path: str, check: Callable[[Any], bool], deadline_s: float = 60.0
    ) -> Any:
        """GET `path` until `check(body)` holds (the manager handles a reply a moment later)."""
        end = time.monotonic() + deadline_s
        while True:
            body = (await self.http.get(path)).json()
            if check(body):
                return body
            assert time.monotonic() < end, f"{path} never met the check: {body}"
            await asyncio.sleep(0.02)  # polling the API with a deadline

    async def outcome_of(self, job_id: str, workflow: str) -> Outcome:
        """Wait for a job's end by sending a duplicate trigger with a reply_to (answered at end)."""
        queue = await self.reply_queue()
        await self.trigger(workflow, {}, job_id, queue.name)
        return await self.next_outcome(queue)


SystemFactory = Callable[..., Awaitable[System]]


@pytest.fixture
async def system(amqp_url: str, unique: str, tmp_path: Path) -> AsyncIterator[SystemFactory]:
    """Start a manager serving `yaml_text` (with `{p}` standing for this test's queue prefix)."""
    started: list[System] = []
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()

    async def start(
        yaml_text: str,
        step_queues: list[str] = (),
        worker: str | None = None,
        worker_env: dict[str, str] | None = None,
        log_level: str = "info",
        manager_args: tuple[str, ...] = (),
        manager_env: dict[str, str] | None = None,
        db: Path | str | None = None,
    ) -> System:
        config = tmp_path / "workflows.yaml"
        config.write_text(yaml_text.replace("{p}", unique))
        db = db if db is not None else tmp_path / "wm.db"
        manager = await start_manager(
            config, f"{unique}.wm", amqp_url, db, log_level,
            extra_args=manager_args, env=manager_env,
        )  # fmt: skip
        workers = []
        if step_queues or worker:
            env = {
                "STEP_QUEUES": ",".join(f"{unique}.{q}" for q in step_queues),
                **(worker_env or {}),
            }
            target = worker or "tests/integration/system/stepworkers.py:worker"
            workers.append(await start_worker(target, amqp_url, env))
        http = httpx.AsyncClient(base_url=manager.api_url, timeout=10)
        system = System(
            unique, manager, workers, channel, http, config, db, amqp_url,
            manager_args, manager_env,
        )  # fmt: skip
        started.append(system)
        return system

    yield start
    for system in started:
        await system.http.aclose()
        for worker in system.workers:
            await worker.stop()
        code = await system.manager.process.stop()
        assert code == 0, f"manager exited with {code}:\n{system.manager.process.output}"
        await _delete_queues(channel, system)
    await connection.close()


async def _delete_queues(channel: aio_pika.abc.AbstractChannel, system: System) -> None:
    """Leave the shared broker as we found it: drop the queues this test's manager declared."""
    queue = system.manager.queue
    names = [*manager_queues(queue), *step_queues(load_workflows(system.config).values())]
    for name in names:
        await channel.queue_delete(name)
