"""GET /api/jobs and GET /api/job/{id}: running ids, and one job's steps, result or error."""

from __future__ import annotations

import pytest

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
T0_ISO = "2023-11-14T22:13:20.000Z"
BOOKS = {"books": [{"title": "a"}, {"title": "b"}], "shelf": 3}


async def start(client, workflow: str, payload: dict | None = None, job_id: str = JOB) -> str:
    response = await client.post(f"/api/workflow/{workflow}?id={job_id}", json=payload or {})
    assert response.status_code == 200, response.text
    return job_id


async def detail(client, job_id: str) -> dict:
    response = await client.get(f"/api/job/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()


async def test_running_job(client, clock):
    await start(client, "wordcount", {"text": "a b"})
    clock.advance(1.5)
    body = await detail(client, JOB)
    assert len(body.pop("trace_id")) == 32  # a new trace's: tests/unit/api/test_tracing.py
    assert body == {
        "uuid": JOB,
        "workflow": "wordcount",
        "status": "running",
        "running": [{"name": "split", "startTime": T0_ISO, "elapsed": 1.5}],
        "completed": [
            {"name": "__start__", "startTime": T0_ISO, "elapsed": 0.0, "message": {"text": "a b"}}
        ],
        "failed": [],
        "progress": {"steps_done": 0, "steps_total": 2, "children_done": 0, "children_total": 0},
        "priority": 0,
    }


async def test_completed_job_ends_with_end_and_has_a_result(client, service, clock):
    await start(client, "wordcount", {"text": "a b"})
    clock.advance(2)
    await service.reply(JOB, "split", {"words": ["a", "b"]})
    clock.advance(0.25)
    await service.reply(JOB, "count", {"n": 2})
    clock.advance(100)  # finished jobs' times no longer move
    body = await detail(client, JOB)
    assert body["status"] == "completed"
    assert body["result"] == {"n": 2}
    assert "error" not in body
    assert body["running"] == []
    assert body["completed"] == [
        {"name": "__start__", "startTime": T0_ISO, "elapsed": 0.0, "message": {"text": "a b"}},
        {"name": "split", "startTime": T0_ISO, "elapsed": 2.0, "message": {"words": ["a", "b"]}},
        {
            "name": "count",
            "startTime": "2023-11-14T22:13:22.000Z",
            "elapsed": 0.25,
            "message": {"n": 2},
        },
        {
            "name": "__end__",
            "startTime": "2023-11-14T22:13:22.250Z",
            "elapsed": 0.0,
            "message": {"n": 2},
        },
    ]


async def test_steps_are_listed_in_declaration_order_not_finishing_order(client, service):
    await start(client, "parallel")
    assert [s["name"] for s in (await detail(client, JOB))["running"]] == ["a", "b"]
    await service.reply(JOB, "b", {"from": "b"})
    await service.reply(JOB, "a", {"from": "a"})
    body = await detail(client, JOB)
    assert [s["name"] for s in body["completed"]] == ["__start__", "a", "b"]
    assert [s["name"] for s in body["running"]] == ["c"]


async def test_failed_job_lists_the_failed_step_and_its_error(client, service, clock):
    await start(client, "parallel")
    clock.advance(3)
    await service.reply(JOB, "a", error="disk full")
    clock.advance(60)
    body = await detail(client, JOB)
    assert body["status"] == "failed"
    assert body["error"] == {"step": "a", "message": "disk full"}
    assert "result" not in body
    assert body["failed"] == [
        {"name": "a", "startTime": T0_ISO, "elapsed": 3.0, "message": "disk full"}
    ]
    assert [s["name"] for s in body["completed"]] == ["__start__"]  # no __end__
    # b was in flight when the job failed: its clock stopped with the job.
    assert body["running"] == [{"name": "b", "startTime": T0_ISO, "elapsed": 3.0}]


async def test_task_step_shows_children_and_progress(client, service):
    await start(client, "books")
    await service.reply(JOB, "shelve", BOOKS)
    (each,) = (await detail(client, JOB))["running"]
    first, second = each["tasks"]
    assert each["name"] == "each"
    assert (each["tasks_done"], each["tasks_total"]) == (0, 2)

    await service.reply(first, "fetch")
    await service.reply(first, "tally", {"book": {"title": "a", "words": 7}})
    body = await detail(client, JOB)
    (each,) = body["running"]
    assert (each["tasks_done"], each["tasks_total"]) == (1, 2)
    assert body["progress"] == {
        "steps_done": 1,
        "steps_total": 3,
        "children_done": 1,
        "children_total": 2,
    }

    await service.reply(second, "fetch")
    await service.reply(second, "tally", {"book": {"title": "b", "words": 9}})
    body = await detail(client, JOB)
    each = next(s for s in body["completed"] if s["name"] == "each")
    assert each["tasks"] == [first, second]
    assert "tasks_done" not in each and "tasks_total" not in each
    assert each["message"]["books"] == [{"title": "a", "words": 7}, {"title": "b", "words": 9}]
    assert body["progress"]["children_done"] == 2


async def test_child_job_is_a_job_too(client, service):
    await start(client, "books")
    await service.reply(JOB, "shelve", BOOKS)
    child = (await detail(client, JOB))["running"][0]["tasks"][1]
    body = await detail(client, child)
    assert body["uuid"] == child
    assert body["workflow"] == "books"
    assert body["task"] == "per_book"
    assert body["parent"] == JOB
    assert body["status"] == "running"
    assert body["completed"][0]["message"] == {"book": {"title": "b"}, "shelf": 3}
    assert [s["name"] for s in body["running"]] == ["fetch"]


async def test_top_level_jobs_have_no_parent_or_task(client):
    await start(client, "books")
    body = await detail(client, JOB)
    assert "parent" not in body and "task" not in body


async def test_cancelled_child_keeps_nulls_inside_its_error(client, service):
    await start(client, "books")
    await service.reply(JOB, "shelve", BOOKS)
    first, second = (await detail(client, JOB))["running"][0]["tasks"]
    await service.reply(first, "fetch", error="404 from library")
    body = await detail(client, second)
    assert body["status"] == "cancelled"
    assert body["error"] == {"step": None, "message": f"parent job {JOB} failed"}
    parent = await detail(client, JOB)
    assert parent["failed"][0]["name"] == "each"
    assert parent["failed"][0]["tasks"] == [first, second]


async def test_job_id_in_any_case_is_found(client):
    await start(client, "wordcount")
    for spelling in (JOB.upper(), JOB.replace("-", ""), f"{{{JOB}}}"):
        assert (await detail(client, spelling))["uuid"] == JOB


async def test_unknown_job_is_404(client):
    response = await client.get(f"/api/job/{JOB}")
    assert response.status_code == 404
    assert response.json() == {"error": f"no job {JOB} (running jobs are listed at /api/jobs)"}


@pytest.mark.parametrize("bad", ["nope", "1234", JOB + "0"])
async def test_job_id_not_a_uuid_is_400(client, bad):
    response = await client.get(f"/api/job/{bad}")
    assert response.status_code == 400
    assert response.json()["error"].startswith(f"job id {bad!r} is not a UUID")


async def test_jobs_lists_running_jobs_with_children(client, service):
    other = "0b7e6c1a-2d3f-4a5b-8c9d-1e2f3a4b5c6d"
    await start(client, "books")
    await start(client, "wordcount", job_id=other)
    await service.reply(JOB, "shelve", BOOKS)
    first, second = (await detail(client, JOB))["running"][0]["tasks"]
    await service.reply(other, "split")
    await service.reply(other, "count")  # finished: no longer listed
    response = await client.get("/api/jobs")
    assert response.status_code == 200
    assert response.json() == {"jobs": [JOB, first, second]}


async def test_jobs_when_none(client):
    assert (await client.get("/api/jobs")).json() == {"jobs": []}
