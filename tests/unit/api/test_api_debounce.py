"""Debounced triggers over HTTP: a submission within an open window answers 200 with the
window's job id and `status: debounced`; in trailing mode the held job takes its payload."""

from __future__ import annotations

import pytest

from workflow_manager.engine import JobStatus

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
OTHER = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"


@pytest.fixture
def workflows_yaml() -> str:
    return """
workflows:
  - name: sync
    debounce: {key: order, period: 60, mode: trailing}
    steps: [{name: fetch}]
"""


async def test_a_trigger_of_an_open_window_names_its_job_as_debounced(client, service, clock):
    first = await client.post(f"/api/workflow/sync?id={JOB}", json={"order": 1, "v": 1})
    assert first.json() == {"id": JOB}
    second = await client.post(f"/api/workflow/sync?id={OTHER}", json={"order": 1, "v": 2})
    assert second.status_code == 200, second.text
    assert second.json() == {"id": JOB, "status": "debounced"}
    assert OTHER not in service.state.jobs
    job = service.state.jobs[JOB]
    assert job.status is JobStatus.SCHEDULED and job.payload == {"order": 1, "v": 2}
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    assert (page["status"], page["debounce_key"]) == ("scheduled", "1")
    assert page["payload"] == {"order": 1, "v": 2} and "start_at" in page
    # Another key is a window of its own.
    third = await client.post("/api/workflow/sync", json={"order": 2})
    assert third.status_code == 200 and "status" not in third.json()
