"""GET /api/workflows and GET /api/workflow/{name}: workflows and their top-level jobs."""

from __future__ import annotations

import pytest

BOOKS = {"books": [{"title": "a"}, {"title": "b"}]}


async def start(client, workflow: str, payload: dict | None = None) -> str:
    response = await client.post(f"/api/workflow/{workflow}", json=payload or {})
    assert response.status_code == 200, response.text
    return response.json()["id"]


async def test_workflows_lists_each_workflow_and_each_vhost(client):
    response = await client.get("/api/workflows")
    assert response.status_code == 200
    assert response.json() == [
        {"vhost": "", "name": "wordcount", "job_count": 0},
        {"vhost": "", "name": "parallel", "job_count": 0},
        {"vhost": "", "name": "books", "job_count": 0},
        {"vhost": "eu", "name": "hosted", "job_count": 0},
        {"vhost": "us", "name": "hosted", "job_count": 0},
    ]


async def test_job_count_counts_running_top_level_jobs_only(client, service):
    first = await start(client, "wordcount")
    await start(client, "wordcount")
    books = await start(client, "books")
    await service.reply(books, "shelve", BOOKS)  # two child jobs start: not counted
    await service.reply(first, "split")
    await service.reply(first, "count")  # first wordcount job completes: no longer counted
    entries = (await client.get("/api/workflows")).json()
    counts = {(e["name"], e["vhost"]): e["job_count"] for e in entries}
    assert counts[("wordcount", "")] == 1
    assert counts[("books", "")] == 1
    assert counts[("parallel", "")] == 0


async def test_workflow_jobs_running_completed_failed(client, service, clock):
    done = await start(client, "wordcount")
    failed = await start(client, "wordcount")
    running = await start(client, "wordcount")
    await start(client, "parallel")  # another workflow: not listed
    await service.reply(done, "split")
    await service.reply(done, "count", {"n": 2})
    await service.reply(failed, "split", error="disk full")
    response = await client.get("/api/workflow/wordcount")
    assert response.status_code == 200
    expected = {
        "running": [running], "queued": [], "scheduled": [], "completed": [done],
        "failed": [failed],
    }  # fmt: skip
    assert response.json() == expected


async def test_workflow_jobs_leaves_out_child_jobs(client, service):
    books = await start(client, "books")
    await service.reply(books, "shelve", BOOKS)
    body = (await client.get("/api/workflow/books")).json()
    assert body == {
        "running": [books], "queued": [], "scheduled": [], "completed": [], "failed": []
    }  # fmt: skip


@pytest.mark.parametrize(
    ("query", "minutes_ago", "listed"),
    [
        ("", 479, True),
        ("", 480, True),  # the boundary is inclusive
        ("", 481, False),
        ("?interval=10", 9, True),
        ("?interval=10", 11, False),
        ("?interval=0.5", 0.4, True),
        ("?interval=0.5", 0.6, False),
    ],
)
async def test_interval_filters_finished_jobs(client, service, clock, query, minutes_ago, listed):
    job = await start(client, "wordcount")
    await service.reply(job, "split")
    await service.reply(job, "count")
    clock.advance(minutes_ago * 60)
    body = (await client.get(f"/api/workflow/wordcount{query}")).json()
    assert body["completed"] == ([job] if listed else [])


async def test_interval_never_hides_running_jobs(client, clock):
    job = await start(client, "wordcount")
    clock.advance(10_000 * 60)
    body = (await client.get("/api/workflow/wordcount?interval=1")).json()
    assert body["running"] == [job]


@pytest.mark.parametrize("interval", ["abc", "0", "-5", "inf", "nan", ""])
async def test_bad_interval_is_400(client, interval):
    response = await client.get(f"/api/workflow/wordcount?interval={interval}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith("query parameter 'interval': ")
    assert repr(interval) in error


async def test_unknown_workflow_is_404(client):
    response = await client.get("/api/workflow/word")
    assert response.status_code == 404
    assert response.json()["error"].startswith("unknown workflow 'word' (known: books, hosted,")


async def test_workflow_dropped_on_reload_stays_visible_while_it_has_jobs(client, service):
    job = await start(client, "wordcount")
    del service.workflows["wordcount"]
    body = (await client.get("/api/workflow/wordcount")).json()
    assert body["running"] == [job]
    listed = [e["name"] for e in (await client.get("/api/workflows")).json()]
    assert "wordcount" not in listed


async def test_workflows_with_no_workflows(client, service):
    service.workflows.clear()
    assert (await client.get("/api/workflows")).json() == []
    response = await client.get("/api/workflow/x")
    assert response.json() == {"error": "unknown workflow 'x' (known: none)"}
