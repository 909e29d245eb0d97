"""Starting jobs: the trigger queue (from a plain aio-pika client) and the HTTP API."""

from __future__ import annotations

import uuid

ONE_STEP = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def test_trigger_from_a_plain_client_runs_the_job(system):
    sys = await system(ONE_STEP, step_queues=["only"])
    job_id = str(uuid.uuid4())
    outcome = await sys.run("one", {"n": 1}, job_id)
    assert outcome.correlation_id == job_id
    assert outcome.status == "completed"
    assert outcome.body == {"n": 1, "path": ["only"], "from": "only", "seen_only": True}


async def test_duplicate_trigger_creates_one_job_and_both_get_the_outcome(system):
    sys = await system(ONE_STEP, step_queues=["only"])
    job_id = str(uuid.uuid4())
    first, second = await sys.reply_queue(), await sys.reply_queue()
    await sys.trigger("one", {"n": 1}, job_id, first.name)
    await sys.trigger("one", {"n": 2}, job_id, second.name)
    a, b = await sys.next_outcome(first), await sys.next_outcome(second)
    assert a.body == b.body and a.body["n"] == 1
    # A third duplicate after the end is answered at once, with the same outcome.
    late = await sys.outcome_of(job_id, "one")
    assert late.body == a.body and late.status == "completed"
    listing = (await sys.http.get("/api/workflow/one")).json()
    assert listing["completed"].count(job_id) == 1


async def test_trigger_without_id_gets_one(system):
    sys = await system(ONE_STEP, step_queues=["only"])
    queue = await sys.reply_queue()
    await sys.trigger("one", {}, None, queue.name)
    outcome = await sys.next_outcome(queue)
    assert outcome.status == "completed"
    assert uuid.UUID(outcome.correlation_id)


async def test_rejected_triggers_are_answered_with_the_reason(system):
    sys = await system(ONE_STEP, step_queues=["only"])
    queue = await sys.reply_queue()
    ids = [str(uuid.uuid4()) for _ in range(4)]
    await sys.trigger("nope", {}, ids[0], queue.name)
    await sys.trigger("one", [1, 2], ids[1], queue.name)
    await sys.trigger("one", {}, "not-a-uuid", queue.name)
    await sys.trigger("one", None, ids[2], queue.name, raw=b"{broken")
    await sys.trigger(None, {}, ids[3], queue.name)
    answers = {}
    for _ in range(5):
        outcome = await sys.next_outcome(queue)
        assert outcome.status == "rejected"
        answers[outcome.correlation_id] = outcome.body["error"]
    assert "unknown workflow 'nope'" in answers[ids[0]] and "one" in answers[ids[0]]
    assert "JSON object" in answers[ids[1]]
    assert "not a UUID" in answers["not-a-uuid"]
    assert "not valid JSON" in answers[ids[2]]
    assert "'workflow' header" in answers[ids[3]]
    # None of them became a job.
    for job_id in ids:
        assert (await sys.http.get(f"/api/job/{job_id}")).status_code == 404
    # The manager is still serving.
    assert (await sys.run("one", {})).status == "completed"


async def test_http_submit_runs_the_job(system):
    sys = await system(ONE_STEP, step_queues=["only"])
    response = await sys.http.post("/api/workflow/one", json={"n": 7})
    assert response.status_code == 200
    job_id = response.json()["id"]
    outcome = await sys.outcome_of(job_id, "one")
    assert outcome.body["n"] == 7
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    names = [entry["name"] for entry in job["completed"]]
    assert names == ["__start__", "only", "__end__"]
    assert job["result"] == outcome.body
    again = await sys.http.post(f"/api/workflow/one?id={job_id}", json={})
    assert again.status_code == 409
    assert "already" in again.json()["error"]
    health = await sys.http.get("/healthz")
    assert health.status_code == 200
