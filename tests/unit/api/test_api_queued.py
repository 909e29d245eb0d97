"""Queued jobs through the API: their status and since when, listings, and cancelling them."""

from __future__ import annotations

import pytest

FIRST = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
SECOND = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"

LIMITED = """
workflows:
  - {name: limited, concurrency: {limit: 1, key: account}, steps: [{name: work}]}
"""


@pytest.fixture
def workflows_yaml() -> str:
    return LIMITED


async def _start(client, job_id: str) -> None:
    response = await client.post(f"/api/workflow/limited?id={job_id}", json={"account": "a"})
    assert response.status_code == 200, response.text


async def _sent(service, job_id: str) -> None:
    """Wait for the job's request: a start is a timer due at once, fired after the submission."""
    cid = f"{job_id}:work"
    await service.transport.wait_for(lambda sent: any(m.correlation_id == cid for m in sent))


async def test_a_job_over_its_limit_is_queued_with_the_time_it_entered_the_queue(
    client, service, clock
):
    await _start(client, FIRST)
    await _sent(service, FIRST)
    clock.advance(2)
    await _start(client, SECOND)
    detail = (await client.get(f"/api/job/{SECOND}")).json()
    assert detail["status"] == "queued"
    assert detail["queued_at"] == "2023-11-14T22:13:22.000Z"
    page = (await client.get(f"/api/job/{SECOND}/steps")).json()
    assert (page["status"], page["queued_at"], page["can_cancel"]) == (
        "queued",
        "2023-11-14T22:13:22.000Z",
        True,
    )
    listing = (await client.get("/api/workflow/limited")).json()
    assert (listing["running"], listing["queued"]) == ([FIRST], [SECOND])
    recent = (await client.get("/api/jobs/recent?status=queued")).json()["jobs"]
    assert [job["uuid"] for job in recent] == [SECOND]


async def test_a_queued_job_starts_when_the_running_one_ends(client, service):
    await _start(client, FIRST)
    await _start(client, SECOND)
    await service.reply(FIRST, "work", {"done": 1})
    await _sent(service, SECOND)
    assert (await client.get(f"/api/job/{SECOND}")).json()["status"] == "running"


async def test_a_queued_job_can_be_cancelled(client, service):
    await _start(client, FIRST)
    await _sent(service, FIRST)
    await _start(client, SECOND)
    response = await client.delete(f"/api/job/{SECOND}")
    assert response.status_code == 200, response.text
    assert (await client.get(f"/api/job/{SECOND}")).json()["status"] == "cancelled"
    await service.reply(FIRST, "work", {})
    assert [m.correlation_id for m in service.transport.sent_to("work")] == [f"{FIRST}:work"]
