"""Jobs that wait, on a real manager: cancelling a queued or a scheduled job runs the
workflow's on_cancel steps; `GET /api/workflow/{name}` lists scheduled jobs; a duplicate of a
unique key (AMQP or HTTP) is counted in /metrics; retrying a failed job that has left memory
while another job holds its key is 409."""

from __future__ import annotations

import uuid

WORKFLOWS = """
workflows:
  - name: limited
    concurrency: {limit: 1}
    steps:
      - {name: work, queue: "{p}.work"}
    on_cancel:
      - {name: tidy, queue: "{p}.tidy"}
  - name: refresh
    unique: {key: account}
    steps:
      - {name: fetch, queue: "{p}.fetch"}
"""


def _ids(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


async def test_cancelling_queued_and_scheduled_jobs_runs_their_on_cancel_steps(system):
    sys = await system(WORKFLOWS)
    running, queued, scheduled = _ids(3)
    for job_id, query in ((running, ""), (queued, ""), (scheduled, "&delay=3600")):
        response = await sys.http.post(f"/api/workflow/limited?id={job_id}{query}", json={})
        assert response.status_code == 200, response.text
    await sys.take("work")  # the running one's request
    listing = await sys.until("/api/workflow/limited", lambda body: body["queued"] == [queued])
    assert (listing["running"], listing["scheduled"]) == ([running], [scheduled])
    for job_id in (queued, scheduled):
        assert (await sys.http.delete(f"/api/job/{job_id}")).status_code == 200
        tidy = await sys.take("tidy")
        assert tidy.correlation_id == f"{job_id}:tidy"
        await sys.answer(tidy, b"{}")
        done = await sys.until(
            f"/api/job/{job_id}", lambda job: [e["name"] for e in job["completed"]][1:] == ["tidy"]
        )
        assert done["status"] == "cancelled"


async def test_duplicates_are_counted_and_a_retry_whose_key_is_held_is_409(system):
    sys = await system(WORKFLOWS)
    first, second, third = _ids(3)
    outcomes = await sys.reply_queue()
    await sys.trigger("refresh", {"account": "a"}, first, outcomes.name)
    await sys.answer(await sys.take("fetch"), b"{}", **{"x-error": "down"})
    assert (await sys.next_outcome(outcomes)).status == "failed"
    response = await sys.http.post(f"/api/workflow/refresh?id={second}", json={"account": "a"})
    assert response.status_code == 200, response.text
    await sys.trigger("refresh", {"account": "a"}, third, outcomes.name)  # AMQP: a duplicate
    assert (await sys.next_outcome(outcomes)).status == "duplicate"
    response = await sys.http.post("/api/workflow/refresh", json={"account": "a"})
    assert response.status_code == 409  # HTTP: a duplicate
    metrics = (await sys.http.get("/metrics")).text
    assert 'workflow_manager_duplicate_triggers_total{workflow="refresh"} 2.0' in metrics
    # The failed job has left memory; its key is the second job's: a conflict, not a 404.
    response = await sys.http.post(f"/api/job/{first}/retry")
    assert response.status_code == 409, response.text
    assert f"job {second} has the unique key" in response.json()["error"]
