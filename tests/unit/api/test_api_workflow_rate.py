"""A workflow's rate through the API: a job over it is queued, `waiting_for` says it waits for
its turn under the rate and until when, and the response checks against the OpenAPI model."""

from __future__ import annotations

import pytest

from workflow_manager.api.models import JobDetail

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"

RATED = """
workflows:
  - {name: rated, rate: {limit: 1, per: 10, key: account}, steps: [{name: work}]}
"""


@pytest.fixture
def workflows_yaml() -> str:
    return RATED


async def _start(client, job_id: str) -> None:
    response = await client.post(f"/api/workflow/rated?id={job_id}", json={"account": "a"})
    assert response.status_code == 200, response.text


async def test_a_job_over_its_workflows_rate_waits_queued_until_its_turn(client, service, clock):
    await _start(client, FIRST)
    cid = f"{FIRST}:work"
    await service.transport.wait_for(lambda sent: any(m.correlation_id == cid for m in sent))
    clock.advance(2)
    await _start(client, SECOND)
    detail = (await client.get(f"/api/job/{SECOND}")).json()
    assert detail["status"] == "queued"
    assert detail["waiting_for"] == {
        "kind": "rate", "limit": "rate", "key": '"a"', "running": 1, "of": 1,
        "until": "2023-11-14T22:13:30.000Z",
    }  # fmt: skip
    JobDetail.model_validate(detail)
    assert (await client.get(f"/api/job/{FIRST}")).json()["status"] == "running"
