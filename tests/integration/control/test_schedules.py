"""Schedules on a real manager: an `every: 1` schedule fires once a second, catches up once
after a kill -9, and pausing holds it (across a restart, which keeps its last job too) until
it is resumed."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import time

from ..harness import cli
from ..ticker import TICKER, fire_times


async def _jobs(sys) -> list[str]:
    listing = (await sys.http.get("/api/workflow/ticker")).json()
    return listing["running"] + listing["completed"] + listing["failed"]


async def _wait_jobs(sys, count: int, timeout_s: float = 20) -> list[str]:
    async with asyncio.timeout(timeout_s):
        while len(jobs := await _jobs(sys)) < count:
            await asyncio.sleep(0.1)  # polling the API with a deadline
    return jobs


async def test_every_second_one_job_per_firing(system):
    started = time.time()
    sys = await system(TICKER, step_queues=["tock"])
    jobs = await _wait_jobs(sys, 4)
    fired = fire_times(jobs, started)
    assert len(set(fired)) == len(fired) == len(jobs)
    assert fired == list(range(fired[0], fired[0] + len(fired)))  # once a second, none missed
    (schedule,) = (await sys.http.get("/api/schedules")).json()["schedules"]
    assert (schedule["workflow"], schedule["name"], schedule["every"]) == ("ticker", "tick", 1)
    assert schedule["paused"] is False and schedule["last_job"] in await _jobs(sys)
    assert -0.5 < schedule["next_fire_at"] - time.time() <= 1.5
    job = (await sys.http.get(f"/api/job/{jobs[0]}")).json()
    assert job["completed"][0]["message"] == {"from": "tick"}
    metrics = (await sys.http.get("/metrics")).text
    assert 'workflow_manager_schedule_firings_total{schedule="tick",workflow="ticker"}' in metrics


async def test_after_a_kill_9_of_3_s_one_catch_up_job_and_no_duplicates(system):
    started = time.time()
    sys = await system(TICKER, step_queues=["tock"])
    await _wait_jobs(sys, 2)
    assert await sys.manager.process.stop(signal.SIGKILL) == -9
    before = fire_times(await _jobs_from_journal(sys), started)
    await asyncio.sleep(3)  # the manager is down: the firings of these seconds are missed
    await sys.restart()
    await _wait_jobs(sys, len(before) + 3)
    fired = fire_times(await _jobs(sys), started)
    assert len(set(fired)) == len(fired)
    after = [t for t in fired if t > before[-1]]
    assert after[0] - before[-1] >= 3  # the missed seconds: only the latest runs ...
    assert after == list(range(after[0], after[0] + len(after)))  # ... then once a second


async def _jobs_from_journal(sys) -> list[str]:
    """The jobs the journal holds (the manager is down: its API is not there to ask)."""
    with sqlite3.connect(sys.db) as conn:
        rows = conn.execute("SELECT id FROM jobs WHERE parent_id IS NULL").fetchall()
    return [job_id for (job_id,) in rows]


async def test_pause_holds_the_schedule_across_a_restart_and_resume_releases_it(system):
    sys = await system(TICKER, step_queues=["tock"])
    await _wait_jobs(sys, 1)
    paused = (await sys.http.post("/api/schedules/ticker/tick/pause")).json()
    assert paused["paused"] is True and paused["next_fire_at"] is None
    await asyncio.sleep(1.2)  # a firing in flight when paused may still land
    held = len(await _jobs(sys))
    (before,) = (await sys.http.get("/api/schedules")).json()["schedules"]
    await sys.restart()  # journaled: still paused
    (schedule,) = (await sys.http.get("/api/schedules")).json()["schedules"]
    assert schedule["paused"] is True
    assert schedule["last_job"] == before["last_job"] and before["last_job"] is not None
    await asyncio.sleep(2.5)  # no firing while paused (nor a catch-up at start)
    assert len(await _jobs(sys)) == held
    resumed = (await sys.http.post("/api/schedules/ticker/tick/resume")).json()
    assert resumed["paused"] is False and resumed["next_fire_at"] is not None
    await _wait_jobs(sys, held + 2)
    missing = await sys.http.post("/api/schedules/ticker/nope/pause")
    assert missing.status_code == 404 and "no schedule 'nope'" in missing.json()["error"]


async def test_the_schedules_command_lists_pauses_and_resumes(system):
    sys = await system(TICKER.replace("every: 1,", "every: 3600,"), step_queues=["tock"])
    api = ["--api-url", sys.manager.api_url]
    code, out, err = await cli("schedules", *api)
    assert code == 0, err
    assert out.startswith("ticker/tick: every 3600s; next ")
    code, out, err = await cli("schedules", "pause", "ticker/tick", *api)
    assert code == 0 and out.startswith("ticker/tick: every 3600s; paused"), err
    code, out, _ = await cli("schedules", "resume", "ticker/tick", "--json", *api)
    assert code == 0 and json.loads(out)["paused"] is False
    code, _, err = await cli("schedules", "pause", "ticker/nope", *api)
    assert code == 1 and "no schedule 'nope'" in err
    code, _, err = await cli("schedules", "pause", *api)
    assert code == 2 and "needs WORKFLOW/SCHEDULE" in err
