"""Schedules on a real manager: a fresh journal catches nothing up (a `0 2 * * *` cron
included), nor does a restart with nothing missed; pausing and resuming a schedule publish
run events (`schedule.paused`, `schedule.resumed`)."""

from __future__ import annotations

import json
import sqlite3

from ..harness import take_one

WORKFLOWS = """
workflows:
  - name: nightly
    schedules:
      - {name: at-two, cron: "0 2 * * *"}
      - {name: hourly, every: 3600}
    steps:
      - {name: run, queue: "{p}.run"}
"""


def _since_rows(sys) -> list[tuple[str, float]]:
    with sqlite3.connect(sys.db) as conn:
        return conn.execute(
            "SELECT job_id, at FROM events WHERE kind = 'schedule' AND job_id LIKE '%:since'"
            " ORDER BY job_id"
        ).fetchall()


async def _no_jobs(sys) -> None:
    # Logged once the scheduler has started (and fired any catch-up).
    await sys.manager.process.wait_for_line(r"consuming replies on")
    listing = (await sys.http.get("/api/workflow/nightly")).json()
    assert not any(listing.values()), listing
    schedules = (await sys.http.get("/api/schedules")).json()["schedules"]
    assert [s["last_job"] for s in schedules] == [None, None]


async def test_a_fresh_journal_catches_nothing_up_nor_does_a_restart(system):
    sys = await system(WORKFLOWS)
    await _no_jobs(sys)
    first = _since_rows(sys)
    assert [job_id for job_id, _ in first] == [
        "schedule:nightly/at-two:since", "schedule:nightly/hourly:since"
    ]  # fmt: skip
    await sys.restart()
    await _no_jobs(sys)
    assert _since_rows(sys) == first  # the schedules exist from the first start, still


async def test_pausing_and_resuming_a_schedule_publish_run_events(system):
    sys = await system(WORKFLOWS)
    exchange = f"{sys.manager.queue}.events"
    queue = await sys.channel.declare_queue(exclusive=True)
    await queue.bind(exchange, routing_key="nightly.schedule.*")
    try:
        assert (await sys.http.post("/api/schedules/nightly/at-two/pause")).status_code == 200
        assert (await sys.http.post("/api/schedules/nightly/at-two/resume")).status_code == 200
        got = [await take_one(queue), await take_one(queue)]
        bodies = [json.loads(message.body) for message in got]
        assert [
            (m.routing_key, b["type"], b["status"]) for m, b in zip(got, bodies, strict=True)
        ] == [
            ("nightly.schedule.paused", "schedule.paused", "paused"),
            ("nightly.schedule.resumed", "schedule.resumed", "running"),
        ]
        assert {(b["job"], b["schedule"], b["workflow"]) for b in bodies} == {
            ("nightly/at-two", "at-two", "nightly")
        }
    finally:
        await queue.delete()
        await sys.channel.exchange_delete(exchange)
