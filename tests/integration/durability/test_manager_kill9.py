"""SIGKILL the manager again and again while 300 jobs run: every job still ends, exactly right.

The chaos driver decides *when* to kill (after a random number of outcomes, plus a random
short delay); a failing run prints its seed (set DURABILITY_SEED to replay its kill points).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import uuid

import pytest

from .helpers import CHILDREN_PER_JOB, check_outcomes, expected_result, read_jobs

JOBS = 300
KILLS = 6
HELD_BACK = 30  # triggers sent only after the last kill: every kill finds unfinished jobs
OUTCOMES_TIMEOUT_S = 60.0
TRIGGER_BATCH = 10
TRIGGER_PAUSE_S = 0.4  # 300 jobs over ~12 s
# Each batch's 100 child steps, 50 at a time, take about one pause: jobs are in flight through
# the whole run (a fast manager would otherwise finish a batch long before the next one).
CHILD_DELAY_S = 0.2


async def trickle(rig, payloads: dict[str, int], ids: list[str], to: str) -> None:
    """Publish these triggers at a steady rate (load, not synchronisation), so jobs keep running
    through every kill, and some triggers wait in the queue while no manager is up."""
    for start in range(0, len(ids), TRIGGER_BATCH):
        batch = ids[start : start + TRIGGER_BATCH]
        await asyncio.gather(
            *(
                rig.trigger("chaos-counts", {"n": payloads[i], "delay_s": CHILD_DELAY_S}, i, to)
                for i in batch
            )
        )
        await asyncio.sleep(TRIGGER_PAUSE_S)


@pytest.mark.timeout(170)
async def test_jobs_survive_repeated_sigkills_of_the_manager(rig):
    seed = int(os.environ.get("DURABILITY_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    print(f"DURABILITY_SEED={seed}")  # shown with the output of a failing test
    outcomes = await rig.outcome_queue()
    await rig.start_worker()
    await rig.start_manager()
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    ids = list(payloads)
    first, last = ids[:-HELD_BACK], ids[-HELD_BACK:]
    publishing = asyncio.create_task(trickle(rig, payloads, first, outcomes.queue_name))

    # Kill points: the first while the first triggers are taken in, the others spread over the
    # run; all before the last jobs end, so every kill hits jobs in flight.
    thresholds = [0, *sorted(rng.sample(range(10, JOBS - 60), KILLS - 1))]
    kills: list[tuple[int, int]] = []  # (outcomes so far, exit code)
    recovered: list[int] = []  # running jobs (children included) each restart took over
    for threshold in thresholds:
        await outcomes.wait_for(threshold, OUTCOMES_TIMEOUT_S)
        await asyncio.sleep(rng.uniform(0.05, 0.5))  # chaos driver: a random moment
        kills.append((outcomes.distinct, await rig.kill_manager()))
        manager = await rig.start_manager()
        ready = await manager.wait_for_line(r"running jobs recovered")
        recovered.append(int(re.search(r"\((\d+) running jobs recovered", ready).group(1)))
    await publishing
    await trickle(rig, payloads, last, outcomes.queue_name)
    context = f"seed={seed} kills at {kills}, jobs recovered {recovered}"
    assert [code for _, code in kills] == [-signal.SIGKILL] * KILLS, context
    assert all(done < JOBS for done, _ in kills), f"a kill came after the last outcome: {context}"
    assert sum(recovered) > 0, f"no restart had running jobs to recover: {context}"

    await outcomes.wait_for(JOBS, OUTCOMES_TIMEOUT_S)
    check_outcomes(outcomes, payloads)
    assert await rig.stop_manager() == 0, rig.manager.output

    rows = read_jobs(rig.db)
    roots = {job_id: status for job_id, parent, status in rows if parent is None}
    children = [(parent, status) for _, parent, status in rows if parent is not None]
    assert set(roots) == set(payloads), context
    assert set(roots.values()) == {"completed"}, context
    assert len(children) == JOBS * CHILDREN_PER_JOB, context
    assert {parent for parent, _ in children} == set(payloads), context
    running = [row for row in rows if row[2] == "running"]
    assert not running, f"running rows left in the journal: {running[:5]} ({context})"

    # Finished jobs are still queryable from the journal by a fresh manager.
    await rig.start_manager()
    for job_id in rng.sample(sorted(payloads), 5):
        job = await rig.get_job(job_id)
        assert job["status"] == "completed", job
        assert job["result"] == expected_result(payloads[job_id]), job
    assert await rig.stop_manager() == 0, rig.manager.output
