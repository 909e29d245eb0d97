"""A real manager process (serve options of the test's choosing), a real pyworker, and an AMQP
client; every queue and the events exchange are named after the test and deleted after it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aio_pika
import httpx
import pytest

from workflow_manager.config import load_workflows
from workflow_manager.events.sse import read_events
from workflow_manager.orchestrator import step_queues
from workflow_manager.transport import manager_queues

from ..harness import Manager, Process, start_manager, start_worker

WORKFLOWS = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
  - name: bad
    steps:
      - {name: only, queue: "{p}.only"}
      - {name: boom, queue: "{p}.boom", depends: [only]}
  - name: fan
    steps:
      - {name: prep, queue: "{p}.prep"}
      - {name: each, task: sq, depends: [prep]}
    tasks:
      - name: sq
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
"""
STEP_QUEUES = ("only", "boom", "prep", "square")


@dataclass
class Site:
    """One test's manager, its API client and AMQP channel, and its worker once started."""

    prefix: str
    manager: Manager
    http: httpx.AsyncClient
    channel: aio_pika.abc.AbstractChannel
    amqp_url: str
    worker: Process | None = None

    @property
    def exchange(self) -> str:
        return f"{self.manager.queue}.events"

    async def start_worker(self) -> None:
        """Start the step worker (tests/integration/system/stepworkers.py)."""
        env = {"STEP_QUEUES": ",".join(f"{self.prefix}.{q}" for q in STEP_QUEUES)}
        self.worker = await start_worker(
            "tests/integration/system/stepworkers.py:worker", self.amqp_url, env
        )
        await self.worker.wait_for_line("consuming")

    async def outcome_of(self, job_id: str, timeout_s: float = 30.0) -> dict:
        """The job once it has ended, read from the event stream (no polling)."""
        async with self.http.stream(
            "GET", "/api/events", params={"job": job_id}, timeout=timeout_s
        ) as response:
            job = (await self.http.get(f"/api/job/{job_id}")).json()
            if job.get("status") not in ("running", None):
                return job
            async for message in read_events(response.aiter_lines()):
                event = message.json()
                if (
                    event["job"] == job_id
                    and event["type"].startswith("job.")
                    and (event["type"] != "job.started")
                ):
                    return (await self.http.get(f"/api/job/{job_id}")).json()
        raise AssertionError(f"the stream ended before job {job_id} did")

    async def submit(self, workflow: str, payload: dict, job_id: str) -> None:
        """Start a job over the HTTP API."""
        response = await self.http.post(f"/api/workflow/{workflow}?id={job_id}", json=payload)
        assert response.status_code == 200, response.text


SiteFactory = Callable[..., Awaitable[Site]]


@pytest.fixture
async def site(amqp_url: str, unique: str, tmp_path: Path) -> AsyncIterator[SiteFactory]:
    """Start a manager serving WORKFLOWS with `serve` options `*extra` (worker not started)."""
    made: list[Site] = []
    connection = await aio_pika.connect(amqp_url)
    channel = await connection.channel()
    config = tmp_path / "workflows.yaml"
    config.write_text(WORKFLOWS.replace("{p}", unique))

    async def start(*extra: str) -> Site:
        manager = await start_manager(
            config, f"{unique}.wm", amqp_url, tmp_path / "wm.db", extra_args=extra
        )
        http = httpx.AsyncClient(base_url=manager.api_url, timeout=10)
        made.append(Site(unique, manager, http, channel, amqp_url))
        return made[-1]

    yield start
    for one in made:
        await one.http.aclose()
        if one.worker is not None:
            await one.worker.stop()
        code = await one.manager.process.stop()
        assert code == 0, f"manager exited with {code}:\n{one.manager.process.output}"
        queue = one.manager.queue
        for name in (*manager_queues(queue), *step_queues(load_workflows(config).values())):
            await channel.queue_delete(name)
        await channel.exchange_delete(one.exchange)
    await connection.close()
