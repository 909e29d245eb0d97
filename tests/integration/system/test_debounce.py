"""Debounced triggers, end to end (a real manager, a real worker): 1,000 triggers on one key
published within 2 s start exactly one job, and every one is answered (the first with the job's
outcome, 999 `debounced` naming that job); a trailing window's job runs the last trigger's
payload once the period is over, after a kill -9 in the middle of the window too."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import aio_pika

TRIGGERS = 1_000
WORKFLOWS = """
workflows:
  - name: leading
    debounce: {key: order.id, period: 60}
    steps:
      - {name: sync, queue: "{p}.sync"}
  - name: trailing
    debounce: {key: order.id, period: 6, mode: trailing}
    steps:
      - {name: sync, queue: "{p}.sync"}
"""


class Answers:
    """Every message on a reply queue, as it arrives (acked)."""

    def __init__(self) -> None:
        self.got: list[aio_pika.abc.AbstractIncomingMessage] = []
        self._changed = asyncio.Event()

    async def arrived(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await message.ack()
        self.got.append(message)
        self._changed.set()

    async def until(self, count: int, status: str | None = None, deadline_s: float = 60.0) -> None:
        """Wait until `count` messages (of `status`, if given) have arrived (failing after
        `deadline_s`)."""
        end = time.monotonic() + deadline_s
        while self.statuses().get(status, 0) < count if status else len(self.got) < count:
            remaining = end - time.monotonic()
            assert remaining > 0, f"{self.statuses()} arrived, waiting for {count} {status}"
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                pass

    def statuses(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for message in self.got:
            status = _text((message.headers or {}).get("x-status"))
            counts[status] = counts.get(status, 0) + 1
        return counts


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _record(path: Path) -> list[dict[str, Any]]:
    """The worker's own record of the requests it was sent."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _journal_jobs(db: Path, workflow: str, ended: int, deadline_s: float = 15.0):
    """The journal's jobs of `workflow` as (id, status), once `ended` of them have a finished
    row (the outcome notice may go out while its commit is in flight)."""
    end = time.monotonic() + deadline_s
    while True:
        with sqlite3.connect(db) as conn:
            query = "SELECT id, status FROM jobs WHERE workflow = ?"
            rows = list(conn.execute(query, (workflow,)))
        if sum(status != "running" for _, status in rows) >= ended:
            return rows
        assert time.monotonic() < end, f"journal rows: {rows}"
        await asyncio.sleep(0.05)  # polling the journal with a deadline


async def _start(system, tmp_path: Path):
    record = tmp_path / "requests.jsonl"
    sys_ = await system(
        WORKFLOWS, ["sync"], worker="tests/integration/system/recordingworkers.py:worker",
        worker_env={"RECORD_FILE": str(record)},
    )  # fmt: skip
    answers = Answers()
    queue = await sys_.reply_queue()
    await queue.consume(answers.arrived)
    return sys_, record, answers, queue.name


async def test_a_thousand_triggers_on_one_key_within_two_seconds_start_exactly_one_job(
    system, tmp_path
):
    sys_, record, answers, reply_to = await _start(system, tmp_path)
    ids = [str(uuid.uuid4()) for _ in range(TRIGGERS)]
    # A channel of its own without publisher confirms, so that publishing keeps well within
    # 2 s on a busy machine; every trigger being answered below shows that none was lost.
    connection = await aio_pika.connect(sys_.amqp_url)
    channel = await connection.channel(publisher_confirms=False)
    messages = [
        aio_pika.Message(
            json.dumps({"order": {"id": 42}, "n": n}).encode(),
            headers={"workflow": "leading"},
            correlation_id=job_id,
            reply_to=reply_to,
        )  # fmt: skip
        for n, job_id in enumerate(ids)
    ]
    began = time.monotonic()
    await asyncio.gather(
        *(channel.default_exchange.publish(m, sys_.trigger_queue) for m in messages)
    )
    elapsed = time.monotonic() - began
    assert elapsed < 2.0, f"publishing took {elapsed:.2f}s: too long to test the target"
    await connection.close()

    await answers.until(TRIGGERS)
    assert answers.statuses() == {"debounced": TRIGGERS - 1, "completed": 1}
    (first,) = [m for m in answers.got if _text(m.headers["x-status"]) == "completed"]
    job = first.correlation_id
    # Leading: the job is the first trigger the manager took (published together, the broker
    # orders them), and it runs that trigger's own payload.
    assert job in ids
    for message in answers.got:
        if _text(message.headers["x-status"]) == "debounced":
            assert _text(message.headers["x-job-id"]) == job
            assert json.loads(message.body)["job"] == job
    assert sorted(m.correlation_id for m in answers.got) == sorted(ids)  # each one answered

    requests = _record(record)
    assert [r["cid"] for r in requests] == [f"{job}:sync"]
    assert requests[0]["data"] == {"order": {"id": 42}, "n": ids.index(job)}
    assert await _journal_jobs(sys_.db, "leading", 1) == [(job, "completed")]
    # A named trigger's answer goes out while its batch commits; the metric counts it once
    # committed, a moment later.
    counted = 'workflow_manager_triggers_debounced_total{workflow="leading"} 999.0'
    end = time.monotonic() + 10
    while counted not in (metrics := (await sys_.http.get("/metrics")).text):
        assert time.monotonic() < end, metrics[-2000:]
        await asyncio.sleep(0.05)  # polling the API with a deadline


async def test_a_trailing_window_runs_the_last_payload_once_over_after_a_kill_9_too(
    system, tmp_path
):
    sys_, record, answers, reply_to = await _start(system, tmp_path)
    ids = [str(uuid.uuid4()) for _ in range(5)]
    for v, job_id in enumerate(ids[:3]):
        await sys_.trigger("trailing", {"order": {"id": "a"}, "v": v}, job_id, reply_to)
    await answers.until(2)
    assert answers.statuses() == {"debounced": 2}
    job = await sys_.found(f"/api/job/{ids[0]}")
    assert job["status"] == "scheduled"
    # Killed inside the window: the restart replays the window and the last payload so far.
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    for v, job_id in enumerate(ids[3:], start=3):
        await sys_.trigger("trailing", {"order": {"id": "a"}, "v": v}, job_id, reply_to)
    await answers.until(1, "completed")
    # Each later trigger is answered debounced: a trigger redelivered after the kill (journaled,
    # not yet acked) may be answered twice.
    debounced = {
        m.correlation_id for m in answers.got if _text(m.headers["x-status"]) == "debounced"
    }
    assert debounced == set(ids[1:])
    done = [m for m in answers.got if _text(m.headers["x-status"]) == "completed"]
    assert [m.correlation_id for m in done] == [ids[0]]
    requests = _record(record)
    assert [r["cid"] for r in requests] == [f"{ids[0]}:sync"]
    assert requests[0]["data"] == {"order": {"id": "a"}, "v": 4}
    assert await _journal_jobs(sys_.db, "trailing", 1) == [(ids[0], "completed")]


async def test_a_leading_window_outlives_its_job_and_a_restart(system, tmp_path):
    sys_, record, answers, reply_to = await _start(system, tmp_path)
    first, later = str(uuid.uuid4()), str(uuid.uuid4())
    await sys_.trigger("leading", {"order": {"id": "b"}}, first, reply_to)
    await answers.until(1, "completed")  # the job is over; its 60 s window is not
    assert await _journal_jobs(sys_.db, "leading", 1) == [(first, "completed")]
    # Killed with the window open and its job ended: recovery replays no running job, and
    # recalls the window from the ended job's row.
    assert await sys_.restart(signal.SIGKILL) == -signal.SIGKILL
    await sys_.trigger("leading", {"order": {"id": "b"}}, later, reply_to)
    await answers.until(1, "debounced")
    (debounced,) = [m for m in answers.got if _text(m.headers["x-status"]) == "debounced"]
    assert debounced.correlation_id == later
    assert json.loads(debounced.body)["job"] == first
    assert [r["cid"] for r in _record(record)] == [f"{first}:sync"]
