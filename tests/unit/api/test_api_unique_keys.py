"""A workflow with `unique` through the API: a duplicate submission (HTTP or AMQP) is counted
in `workflow_manager_duplicate_triggers_total`, and retrying a failed job whose key another
job holds is 409, whether the failed job is in memory or has left it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.unit.api.conftest import FakeClock, Service, load_workflows
from workflow_manager.journal import open_journal
from workflow_manager.metrics import Metrics
from workflow_manager.orchestrator import ManagerSettings
from workflow_manager.transport.memory import MemoryTransport

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"
THIRD = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"

YAML = """
workflows:
  - {name: refresh, unique: {key: account}, steps: [{name: fetch}]}
"""


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(["refresh"])


@pytest.fixture
async def service(clock: FakeClock, tmp_path: Path, metrics: Metrics) -> AsyncIterator[Service]:
    orchestrator = Service(
        load_workflows(YAML), ManagerSettings(queue="wm"), await open_journal(tmp_path / "wm.db"),
        MemoryTransport(), clock=clock, observers=[metrics],
    )  # fmt: skip
    await orchestrator.start()
    yield orchestrator
    await orchestrator.stop()


async def _submit(client, job_id: str) -> int:
    response = await client.post(f"/api/workflow/refresh?id={job_id}", json={"account": "a"})
    return response.status_code


def _duplicates(metrics: Metrics) -> str:
    (line,) = [
        line for line in metrics.render().decode().splitlines()
        if line.startswith("workflow_manager_duplicate_triggers_total{")
    ]  # fmt: skip
    return line


async def test_duplicates_by_http_and_amqp_are_counted(client, service, metrics):
    assert (
        _duplicates(metrics) == 'workflow_manager_duplicate_triggers_total{workflow="refresh"} 0.0'
    )
    assert await _submit(client, FIRST) == 200
    assert await _submit(client, SECOND) == 409
    body = json.dumps({"account": "a"}).encode()
    service.transport.declared.add("answers")
    _, handled = service.transport.deliver(
        "wm.jobs", body, correlation_id=THIRD, reply_to="answers", headers={"workflow": "refresh"}
    )
    await handled
    await service.transport.wait_for(lambda _: bool(service.transport.sent_to("answers")))
    (answer,) = service.transport.sent_to("answers")
    assert answer.headers["x-status"] == "duplicate"
    assert (
        _duplicates(metrics) == 'workflow_manager_duplicate_triggers_total{workflow="refresh"} 2.0'
    )


async def test_retrying_a_failed_job_whose_key_is_held_is_409_in_memory_or_not(client, service):
    assert await _submit(client, FIRST) == 200
    await service.reply(FIRST, "fetch", error="down")
    assert await _submit(client, SECOND) == 200  # the key is free again: SECOND holds it
    await service.journal.flush()
    assert FIRST not in service.state.jobs  # FIRST has left memory
    response = await client.post(f"/api/job/{FIRST}/retry")
    assert response.status_code == 409, response.text
    assert f"job {SECOND} has the unique key" in response.json()["error"]
    assert FIRST not in service.state.jobs
    # Another holder, and a retry once the key is free again.
    await service.reply(SECOND, "fetch", {})
    assert await _submit(client, THIRD) == 200
    response = await client.post(f"/api/job/{FIRST}/retry")
    assert response.status_code == 409, response.text
    assert f"job {THIRD} has the unique key" in response.json()["error"]
    await service.reply(THIRD, "fetch", {})
    response = await client.post(f"/api/job/{FIRST}/retry")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "running"
