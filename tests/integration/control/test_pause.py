"""Pausing a job on a real manager: the request in flight finishes and is kept, nothing new is
sent, the pause outlives a kill -9 (it is journaled), and resume carries on."""

from __future__ import annotations

import json
import signal
import uuid

WORKFLOWS = """
workflows:
  - name: two
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: second, queue: "{p}.second", depends: [first]}
"""


async def test_a_paused_job_stays_paused_across_a_kill_and_resumes(system):
    sys_ = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("two", {"n": 1}, job_id, outcomes.name)
    first = await sys_.take("first")
    response = await sys_.http.post(f"/api/job/{job_id}/pause")
    assert response.status_code == 200 and response.json()["status"] == "paused", response.text

    await sys_.answer(first, b'{"n": 2}')  # in flight when paused: its result is kept
    steps = f"/api/job/{job_id}/steps"
    done = await sys_.until(steps, lambda b: b["steps"][0]["status"] == "completed")
    assert done["status"] == "paused" and done["steps"][1]["status"] == "pending"

    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    page = await sys_.found(steps)
    assert (page["status"], page["can_resume"]) == ("paused", True)
    # Had `second` been sent before the kill, its journaled request would be out again now.
    queue = await sys_.channel.declare_queue(f"{sys_.prefix}.second", durable=True)
    assert await queue.get(fail=False) is None

    response = await sys_.http.post(f"/api/job/{job_id}/resume")
    assert response.status_code == 200 and response.json()["status"] == "running", response.text
    second = await sys_.take("second")
    assert json.loads(second.body) == {"n": 2}
    await sys_.answer(second, b'{"n": 3}')
    outcome = await sys_.next_outcome(outcomes)
    assert (outcome.status, outcome.body) == ("completed", {"n": 3})
