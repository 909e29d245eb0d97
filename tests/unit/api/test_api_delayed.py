"""Delayed starts over HTTP: `?delay=` / `?not_before=`, the scheduled job's views, cancelling."""

from __future__ import annotations

import pytest

from tests.unit.api.conftest import T0

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"


async def _schedule(client, query: str) -> None:
    response = await client.post(f"/api/workflow/wordcount?id={JOB}&{query}", json={"t": 1})
    assert response.status_code == 200, response.text
    assert response.json() == {"id": JOB}


@pytest.mark.parametrize(
    ("query", "start_at"),
    [
        ("delay=30", "2023-11-14T22:13:50.000Z"),
        ("not_before=2023-11-14T23:00:00Z", "2023-11-14T23:00:00.000Z"),
        (f"not_before={T0 + 60:.0f}", "2023-11-14T22:14:20.000Z"),
    ],
)
async def test_a_delayed_job_is_scheduled_with_its_start_time_everywhere(
    client, service, query, start_at
):
    await _schedule(client, query)
    assert not service.transport.published  # nothing is sent before the start
    detail = (await client.get(f"/api/job/{JOB}")).json()
    assert (detail["status"], detail["start_at"]) == ("scheduled", start_at)
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    assert (page["status"], page["start_at"], page["can_cancel"]) == ("scheduled", start_at, True)
    assert {s["status"] for s in page["steps"]} == {"pending"}
    await service.journal.flush()
    (listed,) = (await client.get("/api/jobs/recent")).json()["jobs"]
    assert (listed["uuid"], listed["status"], listed["start_at"]) == (JOB, "scheduled", start_at)


async def test_cancelling_a_scheduled_job_ends_it_before_it_starts(client, service):
    await _schedule(client, "delay=30")
    response = await client.delete(f"/api/job/{JOB}")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    assert response.json()["error"]["message"] == "cancelled before it started"
    assert not service.transport.published


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("delay=soon", "query parameter 'delay'"),
        ("delay=-1", "query parameter 'delay'"),
        ("not_before=tomorrow", "query parameter 'not_before'"),
        ("not_before=", "query parameter 'not_before'"),
    ],
)
async def test_bad_delays_are_400_naming_the_parameter(client, service, query, named):
    response = await client.post(f"/api/workflow/wordcount?{query}", json={})
    assert response.status_code == 400, response.text
    assert named in response.json()["error"]
    assert not service.state.jobs
