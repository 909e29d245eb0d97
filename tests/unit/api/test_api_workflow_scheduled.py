"""`GET /api/workflow/{name}` lists the jobs waiting for a delayed start, until they end."""

from __future__ import annotations

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
NOW = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"


async def test_a_scheduled_job_is_listed_as_scheduled_until_it_ends(client, service):
    response = await client.post(f"/api/workflow/wordcount?id={JOB}&delay=30", json={})
    assert response.status_code == 200, response.text
    response = await client.post(f"/api/workflow/wordcount?id={NOW}", json={})
    assert response.status_code == 200, response.text
    listing = (await client.get("/api/workflow/wordcount")).json()
    assert (listing["scheduled"], listing["running"], listing["failed"]) == ([JOB], [NOW], [])
    assert (await client.delete(f"/api/job/{JOB}")).status_code == 200
    await service.journal.flush()
    listing = (await client.get("/api/workflow/wordcount")).json()
    assert (listing["scheduled"], listing["running"], listing["failed"]) == ([], [NOW], [JOB])
