"""Unique jobs over HTTP: a second submission with the key of an unfinished job is 409 naming
that job; once it has ended a new one starts; the job page shows the key."""

from __future__ import annotations

import pytest

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
OTHER = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"


@pytest.fixture
def workflows_yaml() -> str:
    return """
workflows:
  - name: refresh
    unique: {key: account}
    steps: [{name: fetch}]
"""


async def test_a_duplicate_key_is_409_naming_the_unfinished_job(client, service):
    first = await client.post(f"/api/workflow/refresh?id={JOB}", json={"account": "a"})
    assert first.status_code == 200, first.text
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    assert page["unique_key"] == '"a"'
    second = await client.post(f"/api/workflow/refresh?id={OTHER}", json={"account": "a"})
    assert second.status_code == 409, second.text
    body = second.json()
    assert body["job"] == JOB
    assert f"job {JOB} of workflow 'refresh' has the unique key \"a\"" in body["error"]
    assert OTHER not in service.state.jobs
    await service.reply(JOB, "fetch", {})
    third = await client.post(f"/api/workflow/refresh?id={OTHER}", json={"account": "a"})
    assert third.status_code == 200, third.text
