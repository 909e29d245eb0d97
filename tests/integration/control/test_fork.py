"""Forking a job on a real manager: the fork keeps what its source did before the chosen step
and runs the rest (that step with an edited input), also after the source has left memory
and after a kill -9 in the middle of the fork; a task step runs only its failed children."""

from __future__ import annotations

import json
import signal
import uuid

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: second, queue: "{p}.second", depends: [first]}
      - {name: third, queue: "{p}.third", depends: [second]}
  - name: spread
    steps:
      - {name: prepare, queue: "{p}.prepare"}
      - {name: fan, task: each, depends: [prepare]}
      - {name: total, queue: "{p}.total", depends: [fan]}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
"""


async def _empty(sys_, queue: str) -> bool:
    found = await sys_.channel.declare_queue(f"{sys_.prefix}.{queue}", durable=True)
    return await found.get(fail=False) is None


async def _failed_chain(sys_) -> str:
    """A chain job that failed at `second`, after `first` answered {"n": 2}."""
    job_id = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("chain", {"n": 1}, job_id, outcomes.name)
    await sys_.answer(await sys_.take("first"), b'{"n": 2}')
    await sys_.answer(await sys_.take("second"), b"", **{"x-error": "bad input"})
    assert (await sys_.next_outcome(outcomes)).status == "failed"
    return job_id


async def test_a_fork_keeps_the_steps_before_and_runs_the_rest_with_an_edited_input(system):
    sys_ = await system(WORKFLOWS)
    source = await _failed_chain(sys_)
    # The source leaves memory: the fork reads it from the journal.
    assert await sys_.restart() == 0

    response = await sys_.http.post(
        f"/api/job/{source}/fork", json={"from": "second", "input": {"n": 20}}
    )
    assert response.status_code == 201, response.text
    fork = response.json()["id"]
    assert response.json() == {"id": fork, "forked_from": source, "step": "second"}

    second = await sys_.take("second")
    assert second.correlation_id == f"{fork}:second"
    assert json.loads(second.body) == {"n": 20}
    await sys_.answer(second, b'{"n": 21}')
    third = await sys_.take("third")
    assert json.loads(third.body) == {"n": 21}
    await sys_.answer(third, b'{"n": 22}')
    assert await _empty(sys_, "first")  # kept, not run again

    page = await sys_.until(f"/api/job/{fork}/steps", lambda b: b["status"] == "completed")
    assert page["forked_from"] == {
        "job": source, "step": "second", "input": {"n": 20}, "reused": ["first"],
    }  # fmt: skip
    assert page["result"] == {"n": 22}
    assert [s["status"] for s in page["steps"]] == ["completed"] * 3
    listed = (await sys_.http.get(f"/api/job/{source}")).json()
    assert [(f["id"], f["step"]) for f in listed["forks"]] == [(fork, "second")]
    assert (await sys_.http.get(f"/api/job/{source}/steps")).json()["can_fork"] is True


async def test_a_fork_outlives_a_kill_and_keeps_its_kept_steps(system):
    sys_ = await system(WORKFLOWS)
    source = await _failed_chain(sys_)
    response = await sys_.http.post(f"/api/job/{source}/fork", json={"from": "second"})
    assert response.status_code == 201, response.text
    fork = response.json()["id"]
    second = await sys_.take("second")
    assert json.loads(second.body) == {"n": 2}  # its recorded input: first's output

    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    # Replayed from its journaled submission: `first` stays kept, `second` waits for its reply.
    await sys_.answer(second, b'{"n": 3}')
    await sys_.answer(await sys_.take("third"), b'{"n": 4}')
    page = await sys_.until(f"/api/job/{fork}/steps", lambda b: b["status"] == "completed")
    assert page["result"] == {"n": 4}
    assert await _empty(sys_, "first")


async def test_a_fork_from_a_task_step_runs_only_the_children_that_did_not_complete(system):
    sys_ = await system(WORKFLOWS)
    source = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("spread", {}, source, outcomes.name)
    await sys_.answer(await sys_.take("prepare"), b'{"items": [1, 2, 3, 4]}')
    requests = {}
    for _ in range(4):
        request = await sys_.take("square")
        requests[json.loads(request.body)["item"]] = request
    for item in (1, 2):
        await sys_.answer(requests[item], json.dumps({"item": item * item}).encode())
    await sys_.until(
        f"/api/job/{source}/steps",
        lambda b: b["steps"][1].get("children", {}).get("completed") == 2,
    )  # fmt: skip
    await sys_.answer(requests[3], b"", **{"x-error": "no"})  # fails the job; 4 is cancelled
    assert (await sys_.next_outcome(outcomes)).status == "failed"

    response = await sys_.http.post(f"/api/job/{source}/fork", json={"from": "fan"})
    assert response.status_code == 201, response.text
    fork = response.json()["id"]
    again = [await sys_.take("square") for _ in range(2)]
    assert sorted(json.loads(r.body)["item"] for r in again) == [3, 4]
    for request in again:
        item = json.loads(request.body)["item"]
        await sys_.answer(request, json.dumps({"item": item * item}).encode())
    total = await sys_.take("total")
    assert json.loads(total.body)["items"] == [1, 4, 9, 16]  # in element order
    assert await _empty(sys_, "square") and await _empty(sys_, "prepare")
    await sys_.answer(total, b'{"sum": 30}')
    page = await sys_.until(f"/api/job/{fork}/steps", lambda b: b["status"] == "completed")
    assert page["forked_from"]["children_reused"] == 2
    assert page["steps"][1]["children"]["completed"] == 4


async def test_a_fork_is_refused_with_why(system):
    sys_ = await system(WORKFLOWS)
    running = str(uuid.uuid4())
    await sys_.trigger("chain", {"n": 1}, running)
    await sys_.take("first")
    response = await sys_.http.post(f"/api/job/{running}/fork", json={"from": "second"})
    assert response.status_code == 409
    assert "only a completed, failed or cancelled job" in response.json()["error"]

    source = str(uuid.uuid4())
    outcomes = await sys_.reply_queue()
    await sys_.trigger("chain", {"n": 1}, source, outcomes.name)
    await sys_.answer(await sys_.take("first"), b"{}")
    await sys_.answer(await sys_.take("second"), b"{}")
    await sys_.answer(await sys_.take("third"), b"{}")
    assert (await sys_.next_outcome(outcomes)).status == "completed"
    response = await sys_.http.post(f"/api/job/{source}/fork", json={"from": "secnd"})
    assert response.status_code == 404
    assert "has no step 'secnd'" in response.json()["error"]
    assert "did you mean 'second'?" in response.json()["error"]
    response = await sys_.http.post(f"/api/job/{source}/fork", json={"step": "second"})
    assert response.status_code == 400 and "from" in response.json()["error"]
    response = await sys_.http.post(f"/api/job/{uuid.uuid4()}/fork", json={"from": "second"})
    assert response.status_code == 404


async def test_a_fork_runs_the_current_definition_or_the_pinned_one(system):
    sys_ = await system(WORKFLOWS)
    source = await _failed_chain(sys_)
    # The definition changes: `second` now goes to another queue.
    text = sys_.config.read_text()
    sys_.config.write_text(text.replace(f"{sys_.prefix}.second", f"{sys_.prefix}.second2"))
    assert await sys_.restart() == 0
    try:
        for definition, queue in (("pinned", "second"), ("current", "second2")):
            response = await sys_.http.post(
                f"/api/job/{source}/fork", json={"from": "second", "definition": definition}
            )
            assert response.status_code == 201, response.text
            request = await sys_.take(queue)
            assert request.correlation_id == f"{response.json()['id']}:second"
    finally:
        await sys_.channel.queue_delete(f"{sys_.prefix}.second")
