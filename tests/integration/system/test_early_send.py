"""A reply's requests go out while its journal commit is in flight; the reply is acked after."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import aio_pika

from tests.integration.durability.helpers import rabbitmqctl
from workflow_manager.config import parse_workflows
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator, step_queues
from workflow_manager.transport import Broker, manager_queues

WORKFLOW = """
workflows:
  - name: two
    steps:
      - {name: a, queue: "{p}.a"}
      - {name: b, queue: "{p}.b", depends: [a]}
"""


async def _take(channel: aio_pika.abc.AbstractChannel, queue: str) -> aio_pika.IncomingMessage:
    """The next message on `queue`, consumed (wait for it: it is published asynchronously)."""
    declared = await channel.declare_queue(queue, durable=True)
    async with declared.iterator() as messages:
        async for message in messages:
            await message.ack()
            return message
    raise AssertionError(f"no message on {queue}")


async def _counts(queue: str) -> tuple[int, int]:
    """(messages waiting, messages delivered and not acked) of `queue`, as the broker sees it."""
    out = await rabbitmqctl(
        "-q", "--no-table-headers", "list_queues", "name", "messages_ready",
        "messages_unacknowledged",
    )  # fmt: skip
    for line in out.splitlines():
        name, ready, unacked = line.split()
        if name == queue:
            return int(ready), int(unacked)
    raise AssertionError(f"no queue {queue}")


async def test_requests_go_out_before_the_commit_and_the_reply_is_acked_after(
    amqp_url, unique, tmp_path
):
    workflows = parse_workflows(WORKFLOW.replace("{p}", unique))
    settings = ManagerSettings(amqp_url=amqp_url, queue=f"{unique}.wm")
    db = tmp_path / "wm.db"
    journal = await open_journal(db)
    orchestrator = Orchestrator(workflows, settings, journal, Broker(amqp_url, settings.prefetch))
    await orchestrator.start()
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        job_id = await orchestrator.submit("two", {"n": 1})
        request = await asyncio.wait_for(_take(channel, f"{unique}.a"), 20)

        # Another connection takes SQLite's write lock: the manager's next commit has to wait.
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            reply = aio_pika.Message(
                json.dumps({"n": 2}).encode(), correlation_id=request.correlation_id
            )
            await channel.default_exchange.publish(reply, settings.queue)
            nxt = await asyncio.wait_for(_take(channel, f"{unique}.b"), 4)
            # The request for b is out, but the reply that caused it is not durable yet...
            kinds = [row.kind for row in await journal.events_of(job_id)]
            assert "replied" not in kinds
            # ... so it is not acked: a crash now would bring it back.
            assert await _counts(settings.queue) == (0, 1)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert json.loads(nxt.body) == {"n": 2}
        assert nxt.message_id == f"{job_id}:b:1"
        await journal.flush()
        kinds = [row.kind for row in await journal.events_of(job_id)]
        assert kinds.count("replied") == 1 and kinds.count("dispatched") == 2
        await orchestrator.stop()
        assert await _counts(settings.queue) == (0, 0)  # acked once committed, not returned
    finally:
        await orchestrator.stop()
        channel = await connection.channel()
        for name in [*manager_queues(settings.queue), *step_queues(workflows.values())]:
            await channel.queue_delete(name)
        await connection.close()
