"""Every failure policy survives a manager kill -9 in the middle: the journal carries it."""

from __future__ import annotations

import json
import signal
import uuid

WORKFLOWS = """
workflows:
  - name: step-timeout
    steps:
      - {name: hand, queue: "{p}.hand", timeout: 1.5}
  - name: job-timeout
    timeout: 1.5
    steps:
      - {name: hand, queue: "{p}.hand"}
  - name: branches
    steps:
      - {name: hand, queue: "{p}.hand"}
    on_error:
      - {name: alert, queue: "{p}.alert"}
    on_cancel:
      - {name: tidy, queue: "{p}.tidy"}
  - name: tolerant
    steps:
      - {name: spread, task: each}
    tasks:
      - name: each
        itemListKey: items
        max_failed_items: 1
        steps:
          - {name: work, queue: "{p}.work"}
"""


async def _start(system, workflow: str, payload: dict):
    sys_ = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    outcomes = await sys_.channel.declare_queue(f"{sys_.prefix}.outcomes", durable=True)
    await sys_.trigger(workflow, payload, job_id, outcomes.name)
    return sys_, job_id, outcomes


async def _kill_and_restart(sys_) -> None:
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL


async def _outcome(sys_, outcomes, job_id: str):
    outcome = await sys_.next_outcome(outcomes)
    while outcome.correlation_id != job_id:  # notices come at least once: skip repeats
        outcome = await sys_.next_outcome(outcomes)
    await outcomes.delete(if_unused=False, if_empty=False)
    return outcome


async def test_a_pending_step_timeout_fires_after_a_kill(system):
    sys_, job_id, outcomes = await _start(system, "step-timeout", {})
    await sys_.take("hand")  # and never answer it
    await _kill_and_restart(sys_)
    outcome = await _outcome(sys_, outcomes, job_id)
    assert outcome.status == "failed"
    assert "no reply within 1.5s" in outcome.body["error"]["message"]


async def test_a_pending_job_timeout_fires_after_a_kill(system):
    sys_, job_id, outcomes = await _start(system, "job-timeout", {})
    await sys_.take("hand")
    await _kill_and_restart(sys_)
    outcome = await _outcome(sys_, outcomes, job_id)
    assert outcome.body["error"] == {"step": None, "message": "job timed out after 1.5s"}


async def test_an_on_error_branch_in_progress_finishes_after_a_kill(system):
    sys_, job_id, outcomes = await _start(system, "branches", {"k": 1})
    await sys_.answer(await sys_.take("hand"), b"", **{"x-error": "broken"})
    alert = await sys_.take("alert")
    await _kill_and_restart(sys_)
    assert json.loads(alert.body)["error"]["message"] == "broken"
    await sys_.answer(alert, b'{"paged": true}')
    outcome = await _outcome(sys_, outcomes, job_id)
    assert (outcome.status, outcome.body["error"]["step"]) == ("failed", "hand")
    job = (await sys_.http.get(f"/api/job/{job_id}")).json()
    assert any(e["name"] == "alert" and e["message"] == {"paged": True} for e in job["completed"])


async def test_a_cancel_in_progress_finishes_after_a_kill(system):
    sys_, job_id, outcomes = await _start(system, "branches", {"k": 1})
    await sys_.take("hand")
    response = await sys_.http.delete(f"/api/job/{job_id}")
    assert response.json()["status"] == "cancelled"
    tidy = await sys_.take("tidy")
    await _kill_and_restart(sys_)
    await sys_.answer(tidy, b"{}")
    outcome = await _outcome(sys_, outcomes, job_id)
    assert outcome.status == "cancelled"


async def test_tolerated_failed_children_survive_a_kill(system):
    sys_, job_id, outcomes = await _start(system, "tolerant", {"items": ["a", "b", "c"]})
    requests = {json.loads(r.body)["item"]: r for r in [await sys_.take("work") for _ in range(3)]}
    await sys_.answer(requests["b"], b"", **{"x-error": "bad b"})
    await sys_.answer(requests["a"], b'{"item": "A"}')
    # Killed before or after those replies were journaled: either way they count once.
    await _kill_and_restart(sys_)
    await sys_.answer(requests["c"], b'{"item": "C"}')
    outcome = await _outcome(sys_, outcomes, job_id)
    assert outcome.status == "completed"
    assert outcome.body["items"] == ["A", None, "C"]
    (failed,) = outcome.body["failed_items"]
    assert (failed["index"], failed["error"]["message"]) == (1, "bad b")
