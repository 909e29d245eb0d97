"""A failed reply whose effect is journaled counts once, though the broker delivers it again.

Issue 23: the worker's `x-error` reply for attempt 1 carried no `x-attempt` (as the original's
workers send it); the manager was killed after committing it but before its ack left; RabbitMQ
delivered it again after the restart, and it was counted as attempt 2's failure. Here the ack
is lost for certain (a proxy holds back what the manager sends), and the copy arrives only
once attempt 2 is out, the order that used to fail the job.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aio_pika
import pytest

from ..harness import take_one
from .helpers import manager_log, query_journal
from .holdproxy import HoldProxy

# Two attempts in all: a copy of attempt 1's failure counted for attempt 2 fails the job.
WORKFLOW = """
workflows:
  - name: patient
    steps:
      - {name: hand, queue: "{p}.hand", retries: 1,
         retry_backoff: {initial: 0.2, multiplier: 1, max: 0.2}}
"""
JOURNAL_TIMEOUT_S = 20.0


@pytest.fixture
async def proxy(amqp_url: str) -> AsyncIterator[HoldProxy]:
    held = HoldProxy(amqp_url)
    await held.start()
    yield held
    await held.close()


def _rows(db: Path | str, kind: str) -> list[tuple[str | None, dict[str, Any]]]:
    """(job_id, meta) of the journal's rows of `kind`, in order."""
    rows = query_journal(db, f"SELECT job_id, meta FROM events WHERE kind = '{kind}' ORDER BY seq")
    return [
        (job, json.loads(meta) if isinstance(meta, str) else (meta or {})) for job, meta in rows
    ]


async def _replies_journaled(db: Path | str, job_id: str, count: int) -> list[dict[str, Any]]:
    """The metas of the job's reply rows, once the journal holds `count` of them."""
    deadline = time.monotonic() + JOURNAL_TIMEOUT_S
    while True:
        metas = [meta for job, meta in _rows(db, "replied") if job == job_id]
        if len(metas) >= count:
            return metas
        assert time.monotonic() < deadline, f"{len(metas)} of {count} replies journaled: {metas}"
        await asyncio.sleep(0.05)  # polling the journal with a deadline


async def _answer(channel: Any, request: aio_pika.abc.AbstractMessage, body: bytes, **headers):
    """Play the worker: reply to `request` on the test's own connection (not the proxy's)."""
    message = aio_pika.Message(body, correlation_id=request.correlation_id, headers=headers)
    await channel.default_exchange.publish(message, request.reply_to)


async def test_a_redelivered_failed_reply_does_not_fail_the_next_attempt(rig, proxy):
    rig.config.write_text(WORKFLOW.replace("{p}", rig.prefix))
    rig.queues.add(f"{rig.prefix}.hand")
    rig.amqp_url = proxy.url  # the manager's connection goes through the proxy; ours does not
    outcomes = await rig.outcome_queue()
    manager = await rig.start_manager()
    job_id = str(uuid.uuid4())
    await rig.trigger("patient", {}, job_id, outcomes.queue_name)
    hand = await rig.channel.declare_queue(f"{rig.prefix}.hand", durable=True)
    first = await take_one(hand)
    assert first.headers["x-attempt"] == 1

    assert proxy.hold() >= 1  # from now on the manager's acks never reach the broker
    await _answer(rig.channel, first, b"", **{"x-error": "try later"})  # and no x-attempt
    # Logged once the reply's effect is journaled; its ack was held back.
    await manager.wait_for_line(rf"retry scheduled job={job_id} step=hand attempt=2")
    assert await rig.kill_manager() == -signal.SIGKILL

    restarted = await rig.start_manager()
    second = await take_one(hand)
    if second.headers["x-attempt"] == 1:
        # Killed before attempt 1's confirm was journaled: recovery sent it again (at least once).
        second = await take_one(hand)
    assert second.headers["x-attempt"] == 2

    proxy.release()  # the broker takes attempt 1's reply back and delivers it again
    copy = (await _replies_journaled(rig.db, job_id, 2))[1]
    assert copy.get("redelivered") is True, manager_log(restarted)
    ignored = [
        meta for _, meta in _rows(rig.db, "ignored") if meta["subject"] == second.correlation_id
    ]
    assert [meta["reason"] for meta in ignored] == ["redelivered copy of a reply already counted"]

    # A restart replays the copy from the journal: it is ignored again, the job still runs.
    assert await rig.stop_manager() == 0
    await rig.start_manager()
    await _answer(rig.channel, second, b'{"ok": 2}')
    await outcomes.wait_for(1, JOURNAL_TIMEOUT_S)
    (outcome, *_) = outcomes.by_id[job_id]
    assert (outcome.status, outcome.body) == ("completed", {"ok": 2}), manager_log(rig.manager)
