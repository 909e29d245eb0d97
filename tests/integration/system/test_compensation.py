"""compensate end to end: a failed or cancelled job undoes its completed steps newest first,
one at a time, on a real broker with a real manager (killed with -9 while compensating) and
a real pyworker serving the steps; the test plays the compensation workers to see each request.
"""

from __future__ import annotations

import json
import signal
import uuid
from typing import Any

import aio_pika

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: s1, queue: "{p}.s1", compensate: {name: undo1, queue: "{p}.undo"}}
      - {name: s2, depends: [s1], queue: "{p}.s2", compensate: {name: undo2, queue: "{p}.undo"}}
      - {name: s3, depends: [s2], queue: "{p}.s3", compensate: {name: undo3, queue: "{p}.undo"}}
      - {name: boom4, depends: [s3], queue: "{p}.boom4",
         compensate: {name: undo4, queue: "{p}.undo"}}
    on_error:
      - {name: alert, queue: "{p}.alert"}
  - name: fan
    steps:
      - {name: first, queue: "{p}.first", compensate: {name: unfirst, queue: "{p}.undo"}}
      - {name: spread, depends: [first], task: each}
      - {name: hold, depends: [spread], queue: "{p}.hold"}
    tasks:
      - name: each
        itemListKey: items
        steps:
          - {name: book, queue: "{p}.book", compensate: {name: unbook, queue: "{p}.undo"}}
"""


class Undo:
    """Plays the compensation worker on `<p>.undo`: each request once (a redelivery after the
    kill carries the same message id and is skipped), in the order they come."""

    def __init__(self, sys_: Any) -> None:
        self.sys_ = sys_
        self.seen: set[str] = set()
        self.order: list[tuple[str, dict[str, Any]]] = []

    async def next(self) -> aio_pika.abc.AbstractMessage:
        while True:
            request = await self.sys_.take("undo")
            if request.message_id not in self.seen:
                self.seen.add(request.message_id)
                self.order.append((request.correlation_id, json.loads(request.body)))
                return request


async def _start(system, workflow: str, payload: dict, step_queues: list[str] = ()):
    sys_ = await system(WORKFLOWS, step_queues=list(step_queues))
    job_id = str(uuid.uuid4())
    outcomes = await sys_.channel.declare_queue(f"{sys_.prefix}.outcomes", durable=True)
    await sys_.trigger(workflow, payload, job_id, outcomes.name)
    return sys_, job_id, outcomes


async def _outcome(sys_, outcomes, job_id: str):
    outcome = await sys_.next_outcome(outcomes)
    while outcome.correlation_id != job_id:
        outcome = await sys_.next_outcome(outcomes)
    await outcomes.delete(if_unused=False, if_empty=False)
    return outcome


async def test_a_chain_failing_at_step_4_undoes_3_2_1_once_each_across_a_kill(system):
    sys_, job_id, outcomes = await _start(
        system, "chain", {"order": 7}, ["s1", "s2", "s3", "boom4"]
    )
    undo = Undo(sys_)
    undo3 = await undo.next()
    assert undo3.correlation_id == f"{job_id}:undo3"  # its own id, not the step's
    body = json.loads(undo3.body)
    assert body["reason"] == "failed"
    assert body["error"]["step"] == "boom4"
    assert body["error"]["message"] == "ValueError: boom in boom4"
    assert body["output"]["path"] == ["s1", "s2", "s3"]  # what s3 returned
    assert body["input"]["path"] == ["s1", "s2"]  # what s3 was given
    await sys_.answer(undo3, b"{}")
    undo2 = await undo.next()
    assert undo2.correlation_id == f"{job_id}:undo2"
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    # A failing compensation is recorded and the others go on.
    await sys_.answer(undo2, b"", **{"x-error": "refund refused"})
    undo1 = await undo.next()
    assert undo1.correlation_id == f"{job_id}:undo1"
    assert json.loads(undo1.body)["input"] == {"order": 7}
    await sys_.answer(undo1, b"{}")
    alert = await sys_.take("alert")  # on_error runs after the compensations
    await sys_.answer(alert, b"{}")
    outcome = await _outcome(sys_, outcomes, job_id)
    assert outcome.status == "failed"
    assert [cid for cid, _ in undo.order] == [f"{job_id}:undo{i}" for i in (3, 2, 1)]
    job = (await sys_.http.get(f"/api/job/{job_id}")).json()
    runs = job["compensations"]["runs"]
    assert [(r["name"], r["status"], r["attempts"]) for r in runs] == [
        ("undo3", "compensated", 1),
        ("undo2", "failed", 1),
        ("undo1", "compensated", 1),
    ]
    assert runs[1]["error"] == "refund refused"
    retry = await sys_.http.post(f"/api/job/{job_id}/retry")
    assert retry.status_code == 409
    assert "started compensating" in retry.text


async def test_cancel_undoes_five_children_newest_first_then_the_first_step_across_a_kill(
    system,
):
    sys_, job_id, outcomes = await _start(system, "fan", {"items": ["a", "b", "c", "d", "e"]})
    first = await sys_.take("first")
    await sys_.answer(first, json.dumps({"items": ["a", "b", "c", "d", "e"]}).encode())
    books = {}
    for _ in range(5):
        request = await sys_.take("book")
        books[json.loads(request.body)["item"]] = request
    finish_order = ["d", "a", "e", "b", "c"]
    for item in finish_order:  # one reply queue, one consumer: they complete in this order
        await sys_.answer(books[item], json.dumps({"booked": item}).encode())
    await sys_.take("hold")  # every child completed; the job waits here
    response = await sys_.http.delete(f"/api/job/{job_id}")
    assert response.json()["status"] == "cancelled"
    undo = Undo(sys_)
    for expected in ("c", "b"):
        request = await undo.next()
        assert json.loads(request.body)["input"]["item"] == expected
        await sys_.answer(request, b"{}")
    request = await undo.next()
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    await sys_.answer(request, b"{}")
    for _ in range(3):
        await sys_.answer(await undo.next(), b"{}")
    outcome = await _outcome(sys_, outcomes, job_id)
    assert outcome.status == "cancelled"
    undone = [(cid.split(":")[1], body["input"].get("item")) for cid, body in undo.order]
    assert undone == [("unbook", item) for item in reversed(finish_order)] + [("unfirst", None)]
    assert all(body["reason"] == "cancelled" for _, body in undo.order)
    assert undo.order[0][1]["output"] == {"booked": "c"}
    children = {cid.split(":")[0] for cid, _ in undo.order[:5]}
    assert len(children) == 5 and job_id not in children  # each child's own id
    job = (await sys_.http.get(f"/api/job/{job_id}")).json()
    assert [r["status"] for r in job["compensations"]["runs"]] == ["compensated"] * 6
