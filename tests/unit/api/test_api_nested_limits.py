"""Nested limits through the API: `waiting_for` on the job page (the limit a queued job waits
under, none once it runs), and `GET /api/limits`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from tests.unit.api.conftest import FakeClock, Service, load_workflows
from workflow_manager.config.models import WorkflowFile
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings
from workflow_manager.transport.memory import MemoryTransport

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"

NESTED = """
limits:
  - {name: global, limit: 5}
  - {name: per-tenant, limit: 1, key: tenant}
workflows:
  - {name: billing, steps: [{name: work}]}
"""


@pytest.fixture
def workflows_yaml() -> str:
    return NESTED


@pytest.fixture
async def service(clock: FakeClock, tmp_path: Path, workflows_yaml: str) -> AsyncIterator[Service]:
    limits = WorkflowFile.model_validate(yaml.safe_load(workflows_yaml)).limits
    orchestrator = Service(
        load_workflows(workflows_yaml),
        ManagerSettings(queue="wm", job_limits=limits),
        await open_journal(tmp_path / "wm.db"),
        MemoryTransport(),
        clock=clock,
    )
    await orchestrator.start()
    yield orchestrator
    await orchestrator.stop()


async def _start(client, job_id: str, tenant: str) -> None:
    response = await client.post(f"/api/workflow/billing?id={job_id}", json={"tenant": tenant})
    assert response.status_code == 200, response.text


async def _sent(service, job_id: str) -> None:
    cid = f"{job_id}:work"
    await service.transport.wait_for(lambda sent: any(m.correlation_id == cid for m in sent))


async def test_the_job_page_names_the_full_limit_a_queued_job_waits_under(client, service):
    await _start(client, FIRST, "acme")
    await _sent(service, FIRST)
    await _start(client, SECOND, "acme")
    page = (await client.get(f"/api/job/{SECOND}/steps")).json()
    assert page["status"] == "queued"
    assert page["waiting_for"] == {
        "kind": "limit",
        "limit": "per-tenant",
        "key": '"acme"',
        "running": 1,
        "of": 1,
    }
    assert "waiting_for" not in (await client.get(f"/api/job/{FIRST}/steps")).json()
    detail = (await client.get(f"/api/job/{SECOND}")).json()
    assert detail["waiting_for"] == page["waiting_for"]

    await service.reply(FIRST, "work", {})
    await _sent(service, SECOND)
    page = (await client.get(f"/api/job/{SECOND}/steps")).json()
    assert page["status"] == "running"
    assert "waiting_for" not in page
    assert "waiting_for" not in (await client.get(f"/api/job/{SECOND}")).json()


async def test_api_limits_lists_each_limit_with_its_keys_in_use(client, service):
    await _start(client, FIRST, "acme")
    await _sent(service, FIRST)
    await _start(client, SECOND, "acme")
    response = await client.get("/api/limits")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "limits": [
            {
                "name": "global",
                "limit": 5,
                "key": None,
                "workflows": None,
                "keys": [{"key": "null", "running": 1, "queued": 1}],
            },
            {
                "name": "per-tenant",
                "limit": 1,
                "key": "tenant",
                "workflows": None,
                "keys": [{"key": '"acme"', "running": 1, "queued": 1}],
            },
        ]
    }
