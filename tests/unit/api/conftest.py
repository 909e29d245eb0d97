"""The real orchestrator, on the in-memory transport and a real SQLite journal, behind the app.

Tests play the workers with `service.reply(...)`: the reply goes through the whole pipeline,
so the API reads exactly the state (and journal) the running manager would.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from workflow_manager.api import create_app
from workflow_manager.config.models import Workflow, WorkflowFile
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator
from workflow_manager.transport.memory import MemoryTransport

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z

WORKFLOWS_YAML = """
workflows:
  - name: wordcount
    steps:
      - name: split
      - name: count
        depends: [split]
  - name: parallel
    steps:
      - name: a
      - name: b
      - name: c
        depends: [a, b]
  - name: books
    steps:
      - name: shelve
      - name: each
        task: per_book
        depends: [shelve]
      - name: total
        depends: [each]
    tasks:
      - name: per_book
        itemListKey: books
        steps:
          - name: fetch
          - name: tally
            depends: [fetch]
  - name: hosted
    vhosts: [eu, us]
    steps:
      - name: only
"""


def load_workflows(text: str = WORKFLOWS_YAML) -> dict[str, Workflow]:
    """The test workflows by name, validated straight into the config models."""
    doc = WorkflowFile.model_validate(yaml.safe_load(text))
    return {wf.name: wf for wf in doc.workflows}


class FakeClock:
    """A clock the test moves by hand; starts at T0."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


class Service(Orchestrator):
    """The real orchestrator, plus a way for tests to answer its requests as a worker would."""

    transport: MemoryTransport

    async def reply(
        self, job_id: str, step: str, body: Any = None, error: str | None = None
    ) -> None:
        """A worker's answer to `step` of `job_id`, handled through the whole pipeline."""
        raw = json.dumps({} if body is None else body).encode()
        headers = {} if error is None else {"x-error": error}
        _, handled = self.transport.deliver(
            "wm", raw, correlation_id=f"{job_id}:{step}", headers=headers
        )
        await handled


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def workflows_yaml() -> str:
    """The workflows the service runs; a test module overrides this fixture for its own."""
    return WORKFLOWS_YAML


@pytest.fixture
async def service(clock: FakeClock, tmp_path: Path, workflows_yaml: str) -> AsyncIterator[Service]:
    orchestrator = Service(
        load_workflows(workflows_yaml),
        ManagerSettings(queue="wm"),
        await open_journal(tmp_path / "wm.db"),
        MemoryTransport(),
        clock=clock,
    )
    await orchestrator.start()
    yield orchestrator
    await orchestrator.stop()


@pytest.fixture
async def client(service: Service, clock: FakeClock) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(service, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        yield http
