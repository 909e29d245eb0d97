"""A fake orchestrator over the real engine, and an HTTP client for the app built on it.

The fake replaces only the broker: submissions and worker replies go through
`manager.engine.apply`, so the API reads exactly the state the orchestrator would hold.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import pytest
import yaml

from manager.api import create_app, views
from manager.config.models import Workflow, WorkflowFile
from manager.engine import (
    CancelRequested,
    EngineState,
    Job,
    JobSubmitted,
    Refused,
    RetryRequested,
    StepReplied,
    apply,
)
from manager.errors import (
    DuplicateJob,
    InvalidJobId,
    InvalidPayload,
    JobConflict,
    JobNotFound,
    UnknownWorkflow,
)

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


class FakeService:
    """The orchestrator's API surface with a real EngineState and no broker."""

    def __init__(self, workflows: Mapping[str, Workflow], clock: FakeClock) -> None:
        self.workflows = dict(workflows)
        self.state = EngineState.from_workflows(self.workflows)
        self.connected = True
        self.clock = clock
        self.submitted: list[tuple[str, Any, str | None]] = []

    async def submit(self, workflow: str, payload: Any, job_id: str | None = None) -> str:
        """Check like the orchestrator does, then apply JobSubmitted at the clock's time."""
        self.submitted.append((workflow, payload, job_id))
        if workflow not in self.workflows:
            raise UnknownWorkflow(f"unknown workflow '{workflow}'")
        if not isinstance(payload, dict):
            raise InvalidPayload(f"payload must be a JSON object, got {type(payload).__name__}")
        try:
            new_id = str(uuid.UUID(job_id)) if job_id is not None else str(uuid.uuid4())
        except ValueError:
            raise InvalidJobId(f"job id {job_id!r} is not a UUID") from None
        if new_id in self.state.jobs:
            raise DuplicateJob(f"a job with id {new_id} already exists")
        apply(self.state, JobSubmitted(new_id, workflow, payload, self.clock()))
        return new_id

    async def find_job(self, job_id: str) -> Job | None:
        """Jobs live in memory only here; the real service also restores finished ones."""
        return self.state.jobs.get(job_id)

    async def workflow_jobs(self, name: str, finished_since: float) -> dict[str, list[str]]:
        """Group the in-memory jobs as the journal query would."""
        now = self.clock()
        return views.workflow_jobs(name, self.state.jobs.values(), now, now - finished_since)

    async def cancel(self, job_id: str) -> Job:
        """Apply a cancel request, raising what the orchestrator raises when it is refused."""
        return self._control(CancelRequested(job_id, self.clock()))

    async def retry(self, job_id: str) -> Job:
        """Apply a retry request, raising what the orchestrator raises when it is refused."""
        return self._control(RetryRequested(job_id, self.clock()))

    def _control(self, event: CancelRequested | RetryRequested) -> Job:
        _, commands = apply(self.state, event)
        for command in commands:
            if isinstance(command, Refused):
                kind = JobNotFound if command.kind == "not-found" else JobConflict
                raise kind(command.reason)
        return self.state.jobs[event.job_id]

    def reply(self, job_id: str, step: str, body: Any = None, error: str | None = None) -> None:
        """A worker's answer to `step` of `job_id`, at the clock's time."""
        raw = json.dumps({} if body is None else body).encode()
        apply(self.state, StepReplied(f"{job_id}:{step}", raw, self.clock(), error=error))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def service(clock: FakeClock) -> FakeService:
    return FakeService(load_workflows(), clock)


@pytest.fixture
async def client(service: FakeService, clock: FakeClock) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(service, clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as http:
        yield http
