"""POST /api/job/{id}/signal/{step}: completing a waiting step, keeping an early signal, and
every refusal (404 unknown job or step, 409 completed or not waiting, 400 bad body)."""

from __future__ import annotations

import pytest

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
UNKNOWN = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"


@pytest.fixture
def workflows_yaml() -> str:
    return """
workflows:
  - name: approve
    steps:
      - {name: fetch}
      - {name: approval, wait: true, timeout: 600, depends: [fetch]}
      - {name: apply, depends: [approval]}
"""


async def _start(client) -> None:
    response = await client.post(f"/api/workflow/approve?id={JOB}", json={"n": 1})
    assert response.status_code == 200, response.text


async def _signal(client, body, step="approval", job_id=JOB):
    return await client.post(f"/api/job/{job_id}/signal/{step}", json=body)


async def test_a_signal_completes_the_waiting_step_shown_as_waiting_before(client, service):
    await _start(client)
    await service.reply(JOB, "fetch", {"doc": 1})
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    approval = next(s for s in page["steps"] if s["name"] == "approval")
    assert (approval["status"], approval["wait"]) == ("waiting", True)
    assert "waiting_since" in approval and "queue" not in approval
    detail = (await client.get(f"/api/job/{JOB}")).json()
    assert [s["name"] for s in detail["waiting"]] == ["approval"]
    response = await _signal(client, {"approved": True})
    assert response.status_code == 200, response.text
    assert response.json() == {"job": JOB, "step": "approval", "status": "completed"}
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    approval = next(s for s in page["steps"] if s["name"] == "approval")
    assert (approval["status"], approval["output"]) == ("completed", {"approved": True})
    assert [m.queue for m in service.transport.published][-1] == "apply"


async def test_an_early_signal_is_kept_and_used_when_the_step_is_reached(client, service):
    await _start(client)
    response = await _signal(client, {"early": True})
    assert response.json()["status"] == "kept"
    await service.reply(JOB, "fetch", {})
    page = (await client.get(f"/api/job/{JOB}/steps")).json()
    approval = next(s for s in page["steps"] if s["name"] == "approval")
    assert (approval["status"], approval["output"]) == ("completed", {"early": True})


@pytest.mark.parametrize(
    ("job_id", "step", "body", "status", "says"),
    [
        (UNKNOWN, "approval", {}, 404, f"no job {UNKNOWN}"),
        (JOB, "aproval", {}, 404, "has no step 'aproval' (its waiting steps: approval)"),
        (JOB, "fetch", {}, 409, "does not wait for a signal"),
        (JOB, "approval", [1], 400, "request body must be a JSON object (the signal"),
        ("not-a-uuid", "approval", {}, 400, "is not a UUID"),
    ],
)
async def test_bad_signals_are_refused_naming_why(client, job_id, step, body, status, says):
    await _start(client)
    response = await _signal(client, body, step, job_id)
    assert response.status_code == status, response.text
    assert says in response.json()["error"]


async def test_a_signal_for_a_completed_step_or_job_is_409(client, service):
    await _start(client)
    await service.reply(JOB, "fetch", {})
    assert (await _signal(client, {})).status_code == 200
    response = await _signal(client, {})
    assert response.status_code == 409
    assert "is already completed" in response.json()["error"]
    await service.reply(JOB, "apply", {})
    await service.journal.flush()
    response = await _signal(client, {})
    assert response.status_code == 409
    assert f"job {JOB} is already completed" in response.json()["error"]
