"""Messages built to hurt, against a real manager process and the real broker: JSON nested 990
levels deep (about 2 KB) in a trigger, a reply, a signal, an HTTP body and its `x-meta`.

Each is refused at the edge with the depth limit named, before anything changes; intake goes
on for everyone else and no delivery is left unacked.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import aio_pika
import pytest

from ..durability.helpers import rabbitmqctl
from ..harness import take_one

WORKFLOWS = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
  - name: wait
    steps:
      - {name: approval, wait: true, timeout: 600}
"""

DEEP = b"[" * 990 + b"1" + b"]" * 990
DEEP_OBJECT = b'{"d": ' + DEEP + b"}"
DEPTH_ERROR = "nested more than 128 levels deep"
JSON = "application/json"


async def _unacked(queue: str) -> int:
    """RabbitMQ's count of the queue's deliveries handed out and not acked yet."""
    out = await rabbitmqctl("list_queues", "-q", "--no-table-headers", "name",
                            "messages_unacknowledged")  # fmt: skip
    for line in out.splitlines():
        name, _, count = line.rpartition("\t")
        if name.strip() == queue:
            return int(count)
    raise AssertionError(f"no queue {queue} in {out!r}")


async def _take(queue: aio_pika.abc.AbstractQueue, count: int, timeout_s: float = 30) -> list:
    """The next `count` messages on `queue`, acked, through one consumer (not one each)."""
    taken: list[aio_pika.abc.AbstractIncomingMessage] = []
    full = asyncio.Event()

    async def arrived(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        if len(taken) < count:
            taken.append(message)
            await message.ack()
            if len(taken) == count:
                full.set()
        else:
            await message.nack(requeue=True)  # one too many: left on the queue

    tag = await queue.consume(arrived)
    try:
        await asyncio.wait_for(full.wait(), timeout_s)
    except TimeoutError:
        raise AssertionError(f"{len(taken)} of {count} messages on {queue.name}") from None
    finally:
        await queue.cancel(tag)
    return taken


async def test_300_deep_triggers_are_refused_and_20_good_jobs_still_run(system):
    sys = await system(WORKFLOWS, step_queues=["only"])
    poison_answers = await sys.reply_queue()
    poison = [
        sys.trigger("one", None, str(uuid.uuid4()), poison_answers.name, raw=DEEP_OBJECT)
        for _ in range(300)
    ]
    await asyncio.gather(*poison)  # each confirmed by the broker, all before the good ones
    good = await sys.reply_queue()
    ids = {str(uuid.uuid4()) for _ in range(20)}
    started = time.monotonic()
    for job_id in ids:
        await sys.trigger("one", {"n": 1}, job_id, good.name)

    done = set()
    while done != ids:
        outcome = await sys.next_outcome(good, timeout_s=30)
        assert outcome.status == "completed", outcome
        done.add(outcome.correlation_id)
    assert time.monotonic() - started < 30  # the bound: all 20 within 30 s
    # Every poison trigger was answered with the reason, none became a job.
    for message in await _take(poison_answers, 300):
        status = (message.headers or {}).get("x-status")
        assert status in ("rejected", b"rejected"), message.headers
        assert DEPTH_ERROR in json.loads(message.body)["error"]
    assert await _unacked(sys.trigger_queue) == 0


async def test_a_deep_reply_fails_its_step_with_the_reason_and_the_job_page_answers(system):
    sys = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    outcomes = await sys.reply_queue()
    await sys.trigger("one", {}, job_id, outcomes.name)
    request = await sys.take("only")
    await sys.answer(request, DEEP_OBJECT)

    outcome = await sys.next_outcome(outcomes)
    assert outcome.status == "failed"
    assert DEPTH_ERROR in json.dumps(outcome.body)
    page = await sys.http.get(f"/api/job/{job_id}")
    assert page.status_code == 200 and page.json()["status"] == "failed"
    assert await _unacked(sys.manager.queue) == 0


async def test_a_deep_signal_is_dead_lettered_with_the_reason(system):
    sys = await system(WORKFLOWS)
    job_id = str(uuid.uuid4())
    await sys.trigger("wait", {}, job_id)
    await sys.found(f"/api/job/{job_id}")
    message = aio_pika.Message(DEEP_OBJECT, correlation_id=f"{job_id}:approval")
    await sys.channel.default_exchange.publish(message, f"{sys.manager.queue}.signals")

    dead = await sys.channel.declare_queue(f"{sys.manager.queue}.dead", durable=True)
    letter = await take_one(dead)
    reason = letter.headers["x-dead-reason"]
    assert DEPTH_ERROR in (reason.decode() if isinstance(reason, bytes) else reason)
    steps = (await sys.http.get(f"/api/job/{job_id}/steps")).json()["steps"]
    assert steps[0]["status"] == "waiting"  # the signal changed nothing
    assert await _unacked(f"{sys.manager.queue}.signals") == 0


@pytest.mark.parametrize("where", ["body", "x-meta"])
async def test_a_deep_http_submission_is_refused_with_400_and_holds_no_slot(system, where):
    sys = await system(WORKFLOWS, step_queues=["only"], manager_args=("--max-running-jobs", "3"))
    for _ in range(3):
        if where == "body":
            answer = await sys.http.post(
                "/api/workflow/one", content=DEEP_OBJECT, headers={"content-type": JSON}
            )
        else:
            answer = await sys.http.post(
                "/api/workflow/one", json={}, headers={"x-meta": DEEP_OBJECT.decode()}
            )
        assert answer.status_code == 400, answer.text
        assert DEPTH_ERROR in answer.json()["error"]
    # Three refused submissions hold none of the three slots: a good job runs at once.
    good = await sys.http.post("/api/workflow/one", json={"n": 1})
    assert good.status_code == 200
    outcome = await asyncio.wait_for(sys.outcome_of(good.json()["id"], "one"), 30)
    assert outcome.status == "completed"


async def test_json_nested_within_the_limit_goes_through(system):
    sys = await system(WORKFLOWS, step_queues=["only"])
    nested: object = 1
    for _ in range(100):
        nested = [nested]
    outcome = await sys.run("one", {"d": nested})
    assert outcome.status == "completed" and outcome.body["d"] == nested


@pytest.mark.parametrize(
    "headers",
    [
        {"workflow": "one", "x-delay": "9" * 70_000},  # a reason quoting a 70 KB value
        {"junk": "j" * 130_900},  # no workflow header; the headers nearly fill a frame
    ],
    ids=["long-reason", "near-frame-headers"],
)
async def test_a_trigger_whose_dead_letter_would_not_fit_a_frame_is_dead_lettered_once(
    system, headers
):
    sys = await system(WORKFLOWS, step_queues=["only"])
    poison = aio_pika.Message(b"{}", headers=headers, correlation_id=str(uuid.uuid4()))
    await sys.channel.default_exchange.publish(poison, sys.trigger_queue)
    # A good trigger naming no job: before, each lost connection redelivered it as a new job.
    good = await sys.reply_queue()
    await sys.trigger("one", {"n": 1}, None, good.name)
    outcome = await sys.next_outcome(good)
    assert outcome.status == "completed"

    dead = await sys.channel.declare_queue(f"{sys.manager.queue}.dead", durable=True)
    letter = await take_one(dead)
    assert "workflow" not in headers or letter.headers["workflow"] == "one"
    assert len(str(letter.headers["x-dead-reason"])) < 2_200
    # Still connected, nothing redelivered: a second good job, then no second dead letter
    # and one job each.
    assert (await sys.run("one", {"n": 2})).status == "completed"
    assert await dead.get(fail=False) is None
    jobs = (await sys.http.get("/api/workflow/one")).json()
    assert len(jobs["completed"]) == 2
    assert await _unacked(sys.trigger_queue) == 0
