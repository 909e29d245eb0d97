"""Compensations in the API: GET /api/job/{id}, the job page and the definition show them; a job
that started compensating refuses a retry with 409 saying why. Real orchestrator and journal."""

from __future__ import annotations

import pytest

from workflow_manager.api.compensations import compensation_view
from workflow_manager.api.models import JobDetail, JobPage, WorkflowDefinition
from workflow_manager.engine.snapshot import restore, snapshot

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"

YAML = """
workflows:
  - name: order
    steps:
      - name: reserve
        compensate: {name: release, queue: inventory-release}
      - name: charge
        depends: [reserve]
        compensate: {name: refund}
      - name: ship
        depends: [charge]
    on_error:
      - name: alert
"""


@pytest.fixture
def workflows_yaml() -> str:
    return YAML


async def _fail_at_ship(client, service) -> None:
    response = await client.post(f"/api/workflow/order?id={JOB}", json={"order": 1})
    assert response.status_code == 200, response.text
    await service.reply(JOB, "reserve", {"reservation": "r1"})
    await service.reply(JOB, "charge", {"charge": "c1"})
    await service.reply(JOB, "ship", error="no courier")


async def test_the_job_lists_its_compensations_in_order_with_their_status(client, service):
    await _fail_at_ship(client, service)
    detail = (await client.get(f"/api/job/{JOB}")).json()
    JobDetail.model_validate(detail)  # as the OpenAPI document says
    assert detail["status"] == "failed"
    runs = detail["compensations"]["runs"]
    assert detail["compensations"]["reason"] == "failed"
    assert [(r["step"], r["name"], r["status"]) for r in runs] == [
        ("charge", "refund", "running"),
        ("reserve", "release", "pending"),
    ]
    (charge,) = [s for s in detail["completed"] if s["name"] == "charge"]
    assert charge["compensation"] == "compensating"
    await service.reply(JOB, "refund", error="refund refused")
    await service.reply(JOB, "release", {})
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    JobPage.model_validate(page)
    assert page["can_retry"] is False
    steps = {s["name"]: s for s in page["steps"]}
    assert (steps["reserve"]["status"], steps["reserve"]["compensate"]) == (
        "compensated",
        "release",
    )
    assert steps["charge"]["status"] == "completed"  # its compensation failed: not undone
    assert steps["alert"]["status"] == "running"  # on_error runs after the compensations
    runs = page["compensations"]["runs"]
    assert [(r["name"], r["status"], r.get("error")) for r in runs] == [
        ("refund", "failed", "refund refused"),
        ("release", "compensated", None),
    ]
    assert runs[1]["queue"] == "inventory-release"


async def test_a_retry_after_compensation_started_is_409_saying_why(client, service):
    await _fail_at_ship(client, service)
    response = await client.post(f"/api/job/{JOB}/retry")
    assert response.status_code == 409, response.text
    assert "compensat" in response.text


async def test_the_definition_shows_each_compensation(client):
    definition = (await client.get("/api/workflow/order/definition")).json()
    WorkflowDefinition.model_validate(definition)
    reserve = definition["steps"][0]
    assert reserve["compensate"] == {"name": "release", "queue": "inventory-release", "retries": 0}


async def test_a_finished_jobs_snapshot_restores_its_compensations(client, service):
    await _fail_at_ship(client, service)
    await service.reply(JOB, "refund", {})
    job = service.state.jobs[JOB]
    restored = restore(snapshot(job), job.workflow)
    assert compensation_view(restored) == compensation_view(job)
    assert restored.steps["charge"].status == job.steps["charge"].status
