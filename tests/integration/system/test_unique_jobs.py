"""Unique jobs, end to end: a second trigger for the key of an unfinished job is answered
`duplicate` with the first job's id (x-job-id) and starts nothing; once the first has
completed, a third trigger with that key starts a job; the key survives a kill -9."""

from __future__ import annotations

import json
import signal
import uuid

WORKFLOWS = """
workflows:
  - name: refresh
    unique: {key: account}
    steps:
      - {name: fetch, queue: "{p}.fetch"}
"""


async def test_a_second_trigger_is_a_duplicate_until_the_first_job_completes(system):
    sys_ = await system(WORKFLOWS)
    first, second, third = (str(uuid.uuid4()) for _ in range(3))
    outcomes = await sys_.reply_queue()
    await sys_.trigger("refresh", {"account": "a"}, first, outcomes.name)
    request = await sys_.take("fetch")
    assert request.correlation_id == f"{first}:fetch"
    # Killed while the first job runs: the key is still held after the restart.
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL

    await sys_.trigger("refresh", {"account": "a", "again": True}, second, outcomes.name)
    answer = await sys_.next_outcome(outcomes)
    assert (answer.correlation_id, answer.status) == (second, "duplicate")
    assert answer.body["job"] == first and "has the unique key" in answer.body["error"]
    response = await sys_.http.get(f"/api/job/{second}")
    assert response.status_code == 404  # no job was made

    await sys_.answer(request, b'{"fresh": 1}')
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.correlation_id, outcome.status) == (first, "completed")
    await sys_.trigger("refresh", {"account": "a"}, third, outcomes.name)
    request = await sys_.take("fetch")
    while request.correlation_id == f"{first}:fetch":  # sent again by the recovery: at least once
        request = await sys_.take("fetch")
    assert request.correlation_id == f"{third}:fetch"
    assert json.loads(request.body) == {"account": "a"}


async def test_the_duplicate_answer_carries_the_job_id_header(system):
    sys_ = await system(WORKFLOWS)
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("refresh", {"account": None}, first, outcomes.name)
    await sys_.take("fetch")
    await sys_.trigger("refresh", {}, second, outcomes.name)  # a missing key is null too
    async with outcomes.iterator(timeout=20) as messages:
        async for message in messages:
            await message.ack()
            break
    headers = dict(message.headers)
    assert headers["x-status"] in ("duplicate", b"duplicate")
    assert headers["x-job-id"] in (first, first.encode())
