"""The browsing routes the web UI reads: a job's steps and children, the latest jobs, the
overview and a workflow's definition; on the real orchestrator and a real SQLite journal."""

from __future__ import annotations

import pytest

from .conftest import T0

JOB = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
OTHER = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"
T0_ISO = "2023-11-14T22:13:20.000Z"

YAML = """
workflows:
  - name: flaky
    defaults:
      retries: 1
      retry_backoff: {initial: 0, multiplier: 1, max: 0}
    steps:
      - name: fetch
        queue: fetchers
      - name: store
        depends: [fetch]
    on_error:
      - name: alert
  - name: fan
    steps:
      - name: each
        task: per_item
      - name: total
        depends: [each]
    tasks:
      - name: per_item
        itemListKey: items
        max_in_flight: 2
        max_failed_items: 5
        steps:
          - name: work
"""


@pytest.fixture
def workflows_yaml() -> str:
    return YAML


async def start(client, workflow: str, payload: dict, job_id: str = JOB) -> str:
    response = await client.post(f"/api/workflow/{workflow}?id={job_id}", json=payload)
    assert response.status_code == 200, response.text
    return job_id


async def get(client, path: str, status: int = 200) -> dict:
    response = await client.get(path)
    assert response.status_code == status, response.text
    return response.json()


def by_name(page: dict) -> dict[str, dict]:
    return {step["name"]: step for step in page["steps"]}


async def test_a_running_job_shows_every_step_with_status_and_attempts(client, service, clock):
    await start(client, "flaky", {"url": "x"})
    clock.advance(1.5)
    page = await get(client, f"/api/job/{JOB}/steps")
    assert page["status"] == "running"
    assert page["root"] == JOB
    assert page["payload"] == {"url": "x"}
    assert (page["can_cancel"], page["can_retry"]) == (True, False)
    steps = by_name(page)
    assert list(steps) == ["fetch", "store", "alert"]
    assert steps["fetch"] == {
        "name": "fetch",
        "kind": "step",
        "depends": [],
        "queue": "fetchers",
        "status": "running",
        "attempts": 1,
        "started_at": T0_ISO,
        "elapsed": 1.5,
        "input": {"url": "x"},
        "history": [{"attempt": 1, "dispatched_at": T0_ISO, "outcome": "running", "elapsed": 1.5}],
    }
    assert steps["store"]["status"] == "pending"
    assert steps["store"]["depends"] == ["fetch"]
    assert steps["store"]["history"] == []
    assert (steps["alert"]["kind"], steps["alert"]["status"]) == ("on_error", "pending")


async def test_a_retried_then_failed_step_shows_each_attempt_and_the_branch(client, service, clock):
    await start(client, "flaky", {})
    clock.advance(1)
    await service.reply(JOB, "fetch", error="connection refused")
    await service.transport.wait_for(lambda _: len(service.transport.sent_to("fetchers")) == 2)
    clock.advance(2)
    await service.reply(JOB, "fetch", {"not": "seen"}, error="still refused")
    page = await get(client, f"/api/job/{JOB}/steps")
    assert page["status"] == "failed"
    assert page["branch"] == "on_error"
    assert page["error"]["step"] == "fetch"
    assert (page["can_cancel"], page["can_retry"]) == (False, True)
    fetch = by_name(page)["fetch"]
    assert fetch["status"] == "failed"
    assert fetch["attempts"] == 2
    assert fetch["error"] == "still refused"
    history = fetch["history"]
    assert [(h["attempt"], h["outcome"], h.get("error")) for h in history] == [
        (1, "failed", "connection refused"),
        (2, "failed", "still refused"),
    ]
    assert history[0]["elapsed"] == 1.0
    assert history[1]["dispatched_at"] == "2023-11-14T22:13:21.000Z"
    assert history[1]["finished_at"] == "2023-11-14T22:13:23.000Z"
    alert = by_name(page)["alert"]
    assert (alert["kind"], alert["status"], alert["attempts"]) == ("on_error", "running", 1)
    assert by_name(page)["store"]["status"] == "pending"
    assert page["branch_running"] is True
    await service.reply(JOB, "alert", {})
    page = await get(client, f"/api/job/{JOB}/steps")
    # Its on_error steps have all run: the page no longer says they are running.
    assert (page["branch"], page["branch_running"]) == ("on_error", False)


async def test_an_invalid_reply_is_an_attempt_that_failed_saying_why(client, service):
    await start(client, "flaky", {})
    raw = b"[1, 2]"
    _, handled = service.transport.deliver("wm", raw, correlation_id=f"{JOB}:fetch")
    await handled
    fetch = by_name(await get(client, f"/api/job/{JOB}/steps"))["fetch"]
    (first, *_) = fetch["history"]
    assert first["outcome"] == "failed"
    assert first["error"].startswith("invalid reply: reply body must be a JSON object")


async def test_a_step_in_flight_when_its_job_is_cancelled_shows_cancelled(client, service):
    await start(client, "flaky", {})
    response = await client.delete(f"/api/job/{JOB}")
    assert response.status_code == 200, response.text
    page = await get(client, f"/api/job/{JOB}/steps")
    assert page["status"] == "cancelled"
    assert by_name(page)["fetch"]["status"] == "cancelled"
    assert page["can_cancel"] is False


async def fan_out(client, service, count: int) -> list[str]:
    await start(client, "fan", {"items": [{"n": i} for i in range(count)]})
    detail = await get(client, f"/api/job/{JOB}")
    (each,) = [step for step in detail["running"] if step["name"] == "each"]
    return each["tasks"]


async def test_a_task_step_counts_its_children_by_status(client, service, clock):
    children = await fan_out(client, service, 5)
    await service.reply(children[0], "work", {"ok": 1})
    await service.reply(children[1], "work", error="bad item")
    page = await get(client, f"/api/job/{JOB}/steps")
    each = by_name(page)["each"]
    assert each["kind"] == "task"
    assert each["children"] == {
        "total": 5,
        "pending": 1,
        "running": 2,
        "completed": 1,
        "failed": 1,
        "cancelled": 0,
    }
    child = await get(client, f"/api/job/{children[1]}/steps")
    assert (child["parent"], child["parent_step"], child["index"]) == (JOB, "each", 1)
    assert (child["task"], child["root"], child["status"]) == ("per_item", JOB, "failed")
    assert child["can_retry"] is False  # only top-level jobs are retried


async def test_children_are_paged_in_element_order_and_filtered_by_status(client, service, clock):
    children = await fan_out(client, service, 5)
    clock.advance(3)
    await service.reply(children[0], "work", {"ok": 1})
    await service.reply(children[1], "work", error="bad item")
    page = await get(client, f"/api/job/{JOB}/children?limit=2&offset=1")
    assert page["total"] == 5
    assert page["counts"] == {
        "pending": 1,
        "running": 2,
        "completed": 1,
        "failed": 1,
        "cancelled": 0,
    }
    assert [(c["uuid"], c["index"], c["status"]) for c in page["children"]] == [
        (children[1], 1, "failed"),
        (children[2], 2, "running"),
    ]
    failed = page["children"][0]
    assert (failed["task"], failed["step"], failed["elapsed"]) == ("per_item", "each", 3.0)
    assert failed["error"]["message"] == "bad item"
    pending = await get(client, f"/api/job/{JOB}/children?status=pending")
    assert pending["total"] == 1
    assert [(c["index"], c["status"]) for c in pending["children"]] == [(4, "pending")]
    assert "submitted_at" not in pending["children"][0]
    by_step = await get(client, f"/api/job/{JOB}/children?step=each&status=completed")
    assert [c["uuid"] for c in by_step["children"]] == [children[0]]


async def test_children_of_a_finished_job_come_from_the_journal(client, service):
    children = await fan_out(client, service, 3)
    for child in children[:2]:
        await service.reply(child, "work", {"ok": 1})
    await service.transport.wait_for(lambda _: len(service.transport.sent_to("work")) == 3)
    await service.reply(children[2], "work", {"ok": 1})
    await service.reply(JOB, "total", {"sum": 3})
    assert (await get(client, f"/api/job/{JOB}"))["status"] == "completed"
    page = await get(client, f"/api/job/{JOB}/children")
    assert page["counts"]["completed"] == 3
    assert all("finished_at" in child for child in page["children"])


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("status=done", "status"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("offset=-1", "offset"),
    ],
)
async def test_bad_children_queries_are_400_naming_the_parameter(client, service, query, named):
    await fan_out(client, service, 1)
    body = await get(client, f"/api/job/{JOB}/children?{query}", status=400)
    assert named in body["error"]


async def test_children_of_an_unknown_task_step_are_404_listing_the_task_steps(client, service):
    await fan_out(client, service, 1)
    body = await get(client, f"/api/job/{JOB}/children?step=total", status=404)
    assert body["error"] == f"job {JOB} has no task step 'total' (its task steps: each)"
    body = await get(client, f"/api/job/{OTHER}/children", status=404)
    assert OTHER in body["error"]
    body = await get(client, "/api/job/nope/steps", status=400)
    assert "'nope' is not a UUID" in body["error"]


async def test_recent_jobs_newest_first_with_filters_and_pages(client, service, clock):
    ids = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(4)]
    for number, job_id in enumerate(ids):
        clock.advance(10)
        await start(client, "flaky" if number % 2 else "fan", {"items": []}, job_id)
    body = await get(client, "/api/jobs/recent?limit=3")
    assert [job["uuid"] for job in body["jobs"]] == [ids[3], ids[2], ids[1]]
    assert body["next_before"] == T0 + 20
    rest = await get(client, f"/api/jobs/recent?limit=3&before={body['next_before']}")
    assert [job["uuid"] for job in rest["jobs"]] == [ids[0]]
    assert rest["next_before"] is None
    flaky = await get(client, "/api/jobs/recent?workflow=flaky&status=running")
    assert [job["uuid"] for job in flaky["jobs"]] == [ids[3], ids[1]]
    assert flaky["jobs"][0] == {
        "uuid": ids[3],
        "workflow": "flaky",
        "status": "running",
        "submitted_at": "2023-11-14T22:14:00.000Z",
        "elapsed": 0.0,
    }
    prefix = await get(client, "/api/jobs/recent?id=00000000-0000-4000-8000-000000000002")
    assert [job["uuid"] for job in prefix["jobs"]] == [ids[2]]
    upper = await get(client, f"/api/jobs/recent?id={ids[1][:30].upper()}")
    assert len(upper["jobs"]) == 4
    assert "id" in (await get(client, "/api/jobs/recent?id=<b>", status=400))["error"]


async def test_overview_counts_the_last_day_and_the_median_duration(client, service, clock):
    for number, seconds in enumerate((4.0, 10.0, 1.0)):
        job_id = f"00000000-0000-4000-8000-00000000001{number}"
        await start(client, "flaky", {}, job_id)
        clock.advance(seconds)
        await service.reply(job_id, "fetch", {})
        await service.reply(job_id, "store", {})
    await start(client, "flaky", {}, OTHER)
    body = await get(client, "/api/overview")
    assert body["since"] == "2023-11-13T22:13:35.000Z"
    stats = {entry["name"]: entry for entry in body["workflows"]}
    assert stats["flaky"] == {
        "name": "flaky",
        "running": 1,
        "completed": 3,
        "failed": 0,
        "cancelled": 0,
        "median_seconds": 4.0,
    }
    assert stats["fan"]["median_seconds"] is None
    clock.advance(24 * 3600 + 1)
    later = {entry["name"]: entry for entry in (await get(client, "/api/overview"))["workflows"]}
    assert (later["flaky"]["completed"], later["flaky"]["running"]) == (0, 1)


async def test_a_definition_shows_steps_policies_tasks_branches_hash_and_yaml(client, service):
    body = await get(client, "/api/workflow/fan/definition")
    assert body["hash"] == service.workflows["fan"].content_hash
    each, total = body["steps"]
    assert each["kind"] == "task"
    assert each["task"]["name"] == "per_item"
    assert each["task"]["max_in_flight"] == 2
    assert each["task"]["item_key"] == "item"
    assert [step["name"] for step in each["task"]["steps"]] == ["work"]
    assert total["depends"] == ["each"]
    assert "itemListKey: items" in body["yaml"]
    flaky = await get(client, "/api/workflow/flaky/definition")
    fetch = flaky["steps"][0]
    assert (fetch["queue"], fetch["retries"], fetch["retry_backoff"]["initial"]) == (
        "fetchers",
        1,
        0.0,
    )
    assert flaky["steps"][-1]["kind"] == "on_error"
    missing = await get(client, "/api/workflow/flakey/definition", status=404)
    assert "did you mean 'flaky'" in missing["error"]
