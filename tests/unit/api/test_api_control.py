"""DELETE /api/job/{id} cancels a running job; POST /api/job/{id}/retry reruns a failed one."""

from __future__ import annotations

import pytest

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
UNKNOWN = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"
BOOKS = {"books": [{"title": "a"}, {"title": "b"}], "shelf": 3}


async def start(client, workflow: str, payload: dict | None = None) -> None:
    response = await client.post(f"/api/workflow/{workflow}?id={JOB}", json=payload or {})
    assert response.status_code == 200, response.text


async def detail(client, job_id: str = JOB) -> dict:
    response = await client.get(f"/api/job/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()


def assert_error(response, status: int, *named: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"]
    for name in named:
        assert name in body["error"]
    return body["error"]


async def failed(client, service) -> None:
    await start(client, "wordcount", {"text": "a b"})
    await service.reply(JOB, "split", error="disk full")
    assert (await detail(client))["status"] == "failed"


async def completed(client, service) -> None:
    await start(client, "wordcount")
    await service.reply(JOB, "split", {"words": []})
    await service.reply(JOB, "count", {"n": 0})
    assert (await detail(client))["status"] == "completed"


async def cancelled(client, service) -> None:
    await start(client, "wordcount")
    assert (await client.delete(f"/api/job/{JOB}")).status_code == 200


async def running(client, service) -> None:
    await start(client, "wordcount")


# -- DELETE /api/job/{id} ----------------------------------------------------------------


async def test_cancel_answers_the_job_detail_with_status_cancelled(client, service, clock):
    await start(client, "wordcount", {"text": "a b"})
    clock.advance(2)
    response = await client.delete(f"/api/job/{JOB}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["uuid"] == JOB
    assert body["workflow"] == "wordcount"
    assert body["status"] == "cancelled"
    assert body == await detail(client)
    assert JOB not in service.state.jobs  # it has ended and left memory...
    assert (await service.finished_row(JOB)).status == "cancelled"  # ...for the journal


async def test_cancel_stops_the_children_too(client, service):
    await start(client, "books")
    await service.reply(JOB, "shelve", BOOKS)
    children = (await detail(client))["running"][0]["tasks"]
    response = await client.delete(f"/api/job/{JOB}")
    assert response.json()["status"] == "cancelled"
    for child in children:
        assert (await detail(client, child))["status"] == "cancelled"
    assert (await client.get("/api/jobs")).json() == {"jobs": []}


async def test_cancel_by_upper_case_id(client):
    await start(client, "wordcount")
    response = await client.delete(f"/api/job/{JOB.upper()}")
    assert response.status_code == 200
    assert response.json()["uuid"] == JOB


@pytest.mark.parametrize("setup", [completed, failed, cancelled])
async def test_cancelling_a_finished_job_is_409(client, service, setup):
    await setup(client, service)
    status = (await detail(client))["status"]
    response = await client.delete(f"/api/job/{JOB}")
    assert_error(response, 409, JOB, status)
    assert (await detail(client))["status"] == status


async def test_cancelling_a_child_job_is_409_naming_the_parent(client, service):
    await start(client, "books")
    await service.reply(JOB, "shelve", BOOKS)
    child = (await detail(client))["running"][0]["tasks"][0]
    assert_error(await client.delete(f"/api/job/{child}"), 409, child, JOB)
    assert (await detail(client, child))["status"] == "running"


async def test_cancelling_an_unknown_job_is_404(client):
    assert_error(await client.delete(f"/api/job/{UNKNOWN}"), 404, UNKNOWN)


@pytest.mark.parametrize("bad", ["nope", "1234", JOB + "0"])
async def test_cancelling_a_job_id_that_is_no_uuid_is_400(client, bad):
    message = assert_error(await client.delete(f"/api/job/{bad}"), 400)
    assert message.startswith(f"job id {bad!r} is not a UUID")


# -- POST /api/job/{id}/retry ------------------------------------------------------------


async def test_retry_runs_a_failed_job_again(client, service):
    await failed(client, service)
    response = await client.post(f"/api/job/{JOB}/retry")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["uuid"], body["status"]) == (JOB, "running")
    assert "error" not in body
    assert [s["name"] for s in body["running"]] == ["split"]
    assert body == await detail(client)

    await service.reply(JOB, "split", {"words": ["a", "b"]})
    await service.reply(JOB, "count", {"n": 2})
    body = await detail(client)
    assert (body["status"], body["result"]) == ("completed", {"n": 2})


async def test_retry_keeps_completed_steps(client, service):
    await start(client, "parallel")
    await service.reply(JOB, "a", {"from": "a"})
    await service.reply(JOB, "b", error="flaky")
    body = (await client.post(f"/api/job/{JOB}/retry")).json()
    assert body["status"] == "running"
    assert [s["name"] for s in body["completed"]] == ["__start__", "a"]
    assert [s["name"] for s in body["running"]] == ["b"]


async def test_retry_by_upper_case_id(client, service):
    await failed(client, service)
    response = await client.post(f"/api/job/{JOB.upper()}/retry")
    assert response.status_code == 200
    assert response.json()["status"] == "running"


@pytest.mark.parametrize("setup", [running, completed, cancelled])
async def test_retrying_a_job_that_has_not_failed_is_409(client, service, setup):
    await setup(client, service)
    status = (await detail(client))["status"]
    assert_error(await client.post(f"/api/job/{JOB}/retry"), 409, JOB, status)
    assert (await detail(client))["status"] == status


async def test_retrying_a_child_job_is_409_naming_the_parent(client, service):
    await start(client, "books")
    await service.reply(JOB, "shelve", BOOKS)
    first, _ = (await detail(client))["running"][0]["tasks"]
    await service.reply(first, "fetch", error="404 from library")
    assert_error(await client.post(f"/api/job/{first}/retry"), 409, first, JOB)


async def test_retrying_an_unknown_job_is_404(client):
    assert_error(await client.post(f"/api/job/{UNKNOWN}/retry"), 404, UNKNOWN)


@pytest.mark.parametrize("bad", ["nope", "1234"])
async def test_retrying_a_job_id_that_is_no_uuid_is_400(client, bad):
    message = assert_error(await client.post(f"/api/job/{bad}/retry"), 400)
    assert message.startswith(f"job id {bad!r} is not a UUID")


# -- POST /api/job/{id}/pause and /resume --------------------------------------------------


async def test_a_paused_job_shows_paused_sends_nothing_new_and_resume_carries_on(client, service):
    await start(client, "wordcount", {"text": "a b"})
    response = await client.post(f"/api/job/{JOB}/pause")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "paused"
    steps = (await client.get(f"/api/job/{JOB}/steps")).json()  # what the job page reads
    assert (steps["status"], steps["can_pause"], steps["can_resume"]) == ("paused", False, True)
    await service.reply(JOB, "split", {"words": ["a", "b"]})  # in flight: its result is kept
    assert service.transport.sent_to("count") == []  # ready, but held while paused
    page = await detail(client)
    assert page["status"] == "paused" and page["completed"][1]["name"] == "split"
    listed = (await client.get("/api/jobs/recent")).json()["jobs"]
    assert [(j["uuid"], j["status"]) for j in listed] == [(JOB, "paused")]
    response = await client.post(f"/api/job/{JOB}/resume")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "running"
    assert (await client.get(f"/api/job/{JOB}/steps")).json()["can_pause"] is True
    await service.transport.wait_for(lambda _: len(service.transport.sent_to("count")) == 1)


async def test_pause_and_resume_are_refused_naming_why(client, service):
    assert_error(await client.post(f"/api/job/{UNKNOWN}/pause"), 404, UNKNOWN)
    await running(client, service)
    assert_error(await client.post(f"/api/job/{JOB}/resume"), 409, "is not paused")
    assert (await client.post(f"/api/job/{JOB}/pause")).status_code == 200
    assert_error(await client.post(f"/api/job/{JOB}/pause"), 409, "is paused already")
    assert (await client.delete(f"/api/job/{JOB}")).json()["status"] == "cancelled"
    assert_error(await client.post(f"/api/job/{JOB}/pause"), 409, "already cancelled")
