"""Dead letters: what the manager cannot process is kept in `<queue>.dead`, listed, and replayed."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aio_pika
import pytest

from workflow_manager.deadletters import list_dead_letters, replay_dead_letters
from workflow_manager.errors import Unroutable

from ..harness import cli, take_one

ONE_STEP = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
"""

TWO_WORKFLOWS = (
    ONE_STEP
    + """
  - name: two
    steps:
      - {name: only, queue: "{p}.only"}
"""
)


@dataclass
class Amqp:
    """A plain aio-pika channel, and the queues a test declared with it (deleted afterwards)."""

    channel: aio_pika.abc.AbstractChannel
    created: list[str] = field(default_factory=list)

    async def declare(self, name: str, **arguments: Any) -> aio_pika.abc.AbstractQueue:
        self.created.append(name)
        return await self.channel.declare_queue(name, durable=True, arguments=arguments or None)

    async def publish(self, routing_key: str, body: bytes, **properties: Any) -> None:
        message = aio_pika.Message(body, **properties)
        await self.channel.default_exchange.publish(message, routing_key)

    async def ready(self, name: str) -> int:
        """How many messages wait in `name` (none is taken)."""
        queue = await self.channel.declare_queue(name, passive=True)
        return queue.declaration_result.message_count

    async def until_ready(self, name: str, count: int, timeout_s: float = 10) -> None:
        """Wait until `count` messages wait in `name`: the broker moves dead letters by itself."""
        async with asyncio.timeout(timeout_s):
            while await self.ready(name) < count:
                await asyncio.sleep(0.05)


@pytest.fixture
async def amqp(amqp_url: str, unique: str) -> AsyncIterator[Amqp]:
    """A plain client; afterwards it deletes this test's dead-letter queue and its own queues."""
    connection = await aio_pika.connect(amqp_url)
    client = Amqp(await connection.channel())
    yield client
    for name in dict.fromkeys([f"{unique}.wm.dead", *client.created]):
        await client.channel.queue_delete(name)
    await connection.close()


async def _hand_made(amqp: Amqp, unique: str, *ids: str) -> str:
    """Dead letters as the manager writes them, from `<unique>.target`; returns that queue."""
    target = f"{unique}.target"
    await amqp.declare(f"{unique}.wm.dead")
    await amqp.declare(target)
    for correlation_id in ids:
        headers = {"x-dead-reason": f"bad {correlation_id}", "x-dead-from": target, "k": "v"}
        body = json.dumps({"id": correlation_id}).encode()
        dead = f"{unique}.wm.dead"
        await amqp.publish(dead, body, correlation_id=correlation_id, headers=headers)
    return target


async def test_unprocessable_messages_are_kept_with_reason_source_and_properties(system, amqp):
    sys_ = await system(ONE_STEP, step_queues=["only"])
    queue, jobs = sys_.manager.queue, sys_.trigger_queue
    answers = await sys_.reply_queue()
    broken_id, unknown_id = str(uuid.uuid4()), str(uuid.uuid4())
    sent = {"reply_to": answers.name, "content_type": "application/json"}
    await amqp.publish(
        jobs, b"{broken", correlation_id=broken_id, headers={"workflow": "one"}, **sent
    )
    await amqp.publish(
        jobs, b'{"n": 1}', correlation_id=unknown_id, message_id="m-2",
        headers={"workflow": "nope", "trace": "t-2"}, **sent,
    )  # fmt: skip
    await amqp.publish(
        queue, b'{"x": 1}', correlation_id="garbage-without-colon",
        headers={"x-attempt": 1}, reply_to="somewhere",
    )  # fmt: skip
    # The senders of the two triggers are still answered.
    rejected = {}
    for _ in range(2):
        outcome = await sys_.next_outcome(answers)
        rejected[outcome.correlation_id] = outcome
    assert {o.status for o in rejected.values()} == {"rejected"}
    assert "not valid JSON" in rejected[broken_id].body["error"]
    assert "unknown workflow 'nope'" in rejected[unknown_id].body["error"]
    for pattern in ("not valid JSON", "unknown workflow 'nope'", "garbage-without-colon"):
        await sys_.manager.process.wait_for_line(rf"dead-lettered a message from .*{pattern}")

    # On the wire, for any AMQP client: the manager's headers say why and where from.
    raw = await (await amqp.channel.get_queue(f"{queue}.dead")).get(timeout=10)
    assert raw.headers["x-dead-reason"] and raw.headers["x-dead-from"] in (queue, jobs)
    await raw.nack(requeue=True)

    letters = await list_dead_letters(sys_.amqp_url, queue)
    by_id = {letter.correlation_id: letter for letter in letters}
    assert set(by_id) == {broken_id, unknown_id, "garbage-without-colon"}
    broken, unknown, reply = by_id[broken_id], by_id[unknown_id], by_id["garbage-without-colon"]
    assert "not valid JSON" in broken.reason and broken.source_queue == jobs
    assert (broken.body, broken.reply_to) == (b"{broken", answers.name)
    assert broken.headers == {"workflow": "one"}
    assert "unknown workflow 'nope'" in unknown.reason and unknown.source_queue == jobs
    assert unknown.headers == {"workflow": "nope", "trace": "t-2"}
    assert (unknown.message_id, unknown.body) == ("m-2", b'{"n": 1}')
    assert unknown.reply_to == answers.name
    assert "expected '<job-uuid>:<step-name>'" in reply.reason and reply.source_queue == queue
    assert (reply.headers, reply.reply_to) == ({"x-attempt": 1}, "somewhere")
    assert reply.body == b'{"x": 1}'
    # Listing takes nothing: a second listing shows the same, in the same order.
    assert await list_dead_letters(sys_.amqp_url, queue) == letters
    assert await list_dead_letters(sys_.amqp_url, queue, limit=2) == letters[:2]
    assert await amqp.ready(f"{queue}.dead") == 3
    # None of them became a job, and the manager still serves.
    assert (await sys_.http.get(f"/api/job/{unknown_id}")).status_code == 404
    assert (await sys_.run("one", {})).status == "completed"


async def test_a_dead_lettered_trigger_replayed_once_its_workflow_exists_runs(system, amqp):
    sys_ = await system(ONE_STEP, step_queues=["only"])
    answers = await sys_.reply_queue()
    job_id = str(uuid.uuid4())
    await sys_.trigger("two", {"n": 2}, job_id, answers.name)
    assert (await sys_.next_outcome(answers)).status == "rejected"
    await sys_.manager.process.wait_for_line(r"dead-lettered .*unknown workflow 'two'")
    sys_.config.write_text(TWO_WORKFLOWS.replace("{p}", sys_.prefix))
    await sys_.restart()

    queue = sys_.manager.queue
    assert await replay_dead_letters(sys_.amqp_url, queue, correlation_id=job_id) == 1
    outcome = await sys_.next_outcome(answers)
    assert (outcome.correlation_id, outcome.status) == (job_id, "completed")
    assert outcome.body["n"] == 2
    assert await list_dead_letters(sys_.amqp_url, queue) == []


async def test_replay_by_id_republishes_only_those_with_original_properties(amqp_url, unique, amqp):
    target = await _hand_made(amqp, unique, "a:1", "b:2", "c:3")
    queue = f"{unique}.wm"
    assert await replay_dead_letters(amqp_url, queue, correlation_id="b:2") == 1
    arrived = await take_one(await amqp.channel.get_queue(target))
    assert arrived.correlation_id == "b:2"
    assert arrived.headers == {"k": "v"}  # no x-dead-* any more
    assert json.loads(arrived.body) == {"id": "b:2"}
    # The others stay, in order; an unknown id replays nothing.
    assert [d.correlation_id for d in await list_dead_letters(amqp_url, queue)] == ["a:1", "c:3"]
    assert await replay_dead_letters(amqp_url, queue, correlation_id="zz:9") == 0
    assert await replay_dead_letters(amqp_url, queue, all=True) == 2
    assert await amqp.ready(target) == 2
    assert await list_dead_letters(amqp_url, queue) == []


async def test_replay_leaves_what_it_cannot_send_in_the_dead_letter_queue(
    amqp_url, unique, amqp, caplog
):
    dead, queue = f"{unique}.wm.dead", f"{unique}.wm"
    await amqp.declare(dead)
    await amqp.publish(dead, b"{}", correlation_id="no-source")
    gone = {"x-dead-reason": "r", "x-dead-from": f"{unique}.gone"}
    await amqp.publish(dead, b"{}", correlation_id="gone:1", headers=gone)
    with pytest.raises(Unroutable, match=rf"no queue '{unique}.gone' exists \(it stays in"):
        await replay_dead_letters(amqp_url, queue, all=True)
    assert "no-source" in caplog.text and "no x-dead-from or x-death header" in caplog.text
    left = await list_dead_letters(amqp_url, queue)
    assert [d.correlation_id for d in left] == ["no-source", "gone:1"]


async def test_messages_rabbitmq_dead_lettered_by_policy_are_listed_and_replayed(
    amqp_url, unique, amqp
):
    """A step queue that dead-letters to `<queue>.dead` (see the protocol page) feeds it too."""
    dead, step = f"{unique}.wm.dead", f"{unique}.step"
    await amqp.declare(dead)
    arguments = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead}
    source = await amqp.declare(step, **arguments)
    await amqp.publish(step, b'{"s": 1}', correlation_id="j:s", headers={"x-attempt": 1})
    async with source.iterator(timeout=20) as messages:
        async for message in messages:
            await message.reject(requeue=False)
            break
    await amqp.until_ready(dead, 1)
    (letter,) = await list_dead_letters(amqp_url, f"{unique}.wm")
    assert letter.reason == "dead-lettered by RabbitMQ: rejected"
    assert (letter.source_queue, letter.deaths, letter.headers) == (step, 1, {"x-attempt": 1})
    assert await replay_dead_letters(amqp_url, f"{unique}.wm", correlation_id="j:s") == 1
    back = await take_one(source)
    assert back.correlation_id == "j:s" and back.headers == {"x-attempt": 1}  # no x-death


async def test_cli_lists_and_replays_with_exit_codes(amqp_url, unique, amqp):
    target = await _hand_made(amqp, unique, "a:1", "b:2")
    common = ["--amqp-url", amqp_url, "--queue", f"{unique}.wm"]
    code, out, err = await cli("dead-letters", "list", "--json", *common)
    assert code == 0, err
    listed = json.loads(out)
    assert [d["correlation_id"] for d in listed] == ["a:1", "b:2"]
    assert listed[0]["reason"] == "bad a:1" and listed[0]["source_queue"] == target
    assert listed[0]["headers"] == {"k": "v"} and json.loads(listed[0]["body"]) == {"id": "a:1"}
    code, out, _ = await cli("dead-letters", "list", *common)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "REASON", "FROM", "CORRELATION", "ID", "BODY"]
    assert lines[1].split()[:5] == [listed[0]["id"], "bad", "a:1", target, "a:1"]
    code, out, err = await cli("dead-letters", "replay", "--all", *common)
    assert (code, out.strip()) == (0, "replayed 2 dead letters"), err
    assert await amqp.ready(target) == 2
    code, out, _ = await cli("dead-letters", "list", *common)
    assert (code, out.strip()) == (0, f"no dead letters in '{unique}.wm.dead'")


async def test_cli_errors_have_their_exit_codes(amqp_url, unique):
    code, _, err = await cli("dead-letters", "replay")
    assert code == 2 and "--id" in err and "--all" in err
    code, _, err = await cli("dead-letters", "list", "--limit", "0")
    assert code == 2 and "--limit must be at least 1" in err
    code, _, err = await cli("dead-letters", "list", "--amqp-url", "amqp://guest:pw@127.0.0.1:1/")
    assert code == 3 and "cannot connect to RabbitMQ" in err and "pw" not in err
    code, _, err = await cli("dead-letters", "replay", "--all", "--queue", f"{unique}.absent")
    assert code == 3 and f"no queue '{unique}.absent.dead'" in err
    assert "Traceback" not in err


async def test_the_api_lists_dead_letters_with_their_age_and_replays_them(system, amqp):
    sys_ = await system(ONE_STEP, step_queues=["only"])
    queue = sys_.manager.queue
    await amqp.publish(queue, b'{"x": 1}', correlation_id="no-colon-1")
    await amqp.publish(queue, b'{"x": 2}', correlation_id="no-colon-2")
    await amqp.until_ready(f"{queue}.dead", 2)

    listed = (await sys_.http.get("/api/dead-letters")).json()
    assert listed["more"] is False
    first, second = listed["letters"]
    assert (first["correlation_id"], second["correlation_id"]) == ("no-colon-1", "no-colon-2")
    assert "expected '<job-uuid>:<step-name>'" in first["reason"]
    assert (first["source_queue"], first["body"]) == (queue, '{"x": 1}')
    assert first["dead_at"].endswith("Z") and first["headers"] == {}
    one = (await sys_.http.get("/api/dead-letters?limit=1")).json()
    assert [d["correlation_id"] for d in one["letters"]] == ["no-colon-1"] and one["more"]

    bad = await sys_.http.post(
        "/api/dead-letters/replay", json={"all": True, "correlation_id": "x"}
    )
    assert bad.status_code == 400
    assert bad.json()["error"] == (
        'body: send one of {"id": "<letter id>"}, {"correlation_id": "<id>"} or {"all": true}'
    )
    # Replayed to the manager's queue, it is dead-lettered again: it comes back with a new age.
    replayed = await sys_.http.post(
        "/api/dead-letters/replay", json={"correlation_id": "no-colon-2"}
    )
    assert replayed.json() == {"replayed": 1}
    await amqp.until_ready(f"{queue}.dead", 2)
    again = (await sys_.http.get("/api/dead-letters")).json()["letters"]
    assert [d["correlation_id"] for d in again] == ["no-colon-1", "no-colon-2"]
    assert again[1]["dead_at"] >= second["dead_at"]
