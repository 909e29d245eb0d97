"""Cancelling a job that has not started (queued under a limit, or scheduled for later) runs
the workflow's on_cancel steps, as cancelling a running job does; the job ends after them."""

from __future__ import annotations

import pytest

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"

YAML = """
workflows:
  - name: limited
    concurrency: {limit: 1}
    steps: [{name: work}]
    on_cancel: [{name: tidy}]
"""


@pytest.fixture
def workflows_yaml() -> str:
    return YAML


async def _sent(service, cid: str) -> None:
    await service.transport.wait_for(lambda sent: any(m.correlation_id == cid for m in sent))


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("", "queued", "cancelled on request while queued"),
        ("&delay=60", "scheduled", "cancelled before it started"),
    ],
)
async def test_cancelling_an_unstarted_job_runs_its_on_cancel_steps(
    client, service, query, status, message
):
    response = await client.post(f"/api/workflow/limited?id={FIRST}", json={"n": 1})
    assert response.status_code == 200, response.text
    await _sent(service, f"{FIRST}:work")
    response = await client.post(f"/api/workflow/limited?id={SECOND}{query}", json={"n": 2})
    assert response.status_code == 200, response.text
    assert (await client.get(f"/api/job/{SECOND}")).json()["status"] == status
    response = await client.delete(f"/api/job/{SECOND}")
    assert response.status_code == 200, response.text
    await _sent(service, f"{SECOND}:tidy")
    (tidy,) = [m for m in service.transport.published if m.correlation_id == f"{SECOND}:tidy"]
    assert tidy.queue == "tidy"
    assert not [m for m in service.transport.published if m.correlation_id == f"{SECOND}:work"]
    await service.reply(SECOND, "tidy", {})
    detail = (await client.get(f"/api/job/{SECOND}")).json()
    assert detail["status"] == "cancelled"
    assert detail["error"]["message"] == message
