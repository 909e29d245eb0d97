"""The database going away for 5 s under two managers (through a proxy the test cuts: the
shared PostgreSQL keeps running for everyone else): the managers stop rather than go on
without their journal (the one running the partitions at once, the standby at its first
commit after), lose nothing, and once started again finish every job exactly once."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from ..durability.helpers import CHILDREN_PER_JOB, check_outcomes
from .pgproxy import PgProxy
from .rig import each_job_made_once

JOBS = 30
OUTAGE_S = 5.0


@pytest.mark.timeout(180)
async def test_managers_stop_on_a_database_outage_and_resume_losing_nothing(cluster):
    proxy = PgProxy(cluster.db)
    await proxy.start()
    cluster.manager_db = proxy.url
    outcomes = await cluster.outcome_queue()
    await cluster.start_worker()
    managers = [await cluster.start_manager()]
    await managers[0].process.wait_for_line(rf"holds {cluster.partitions}\b")
    managers.append(await cluster.start_manager())
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    for job_id, n in payloads.items():
        await cluster.trigger({"n": n, "delay_s": 0.2}, job_id, outcomes.queue_name)
    await outcomes.wait_for(3, 60)

    running, standby = managers
    await proxy.cut()
    # The manager running the partitions learns of it at its next commit or lease renewal,
    # and stops; the standby, with nothing to write, waits.
    assert await running.process.exited(30) != 0
    assert outcomes.distinct < JOBS, "every job ended before the outage"
    await asyncio.sleep(OUTAGE_S)  # the outage itself: how long the database stays away
    await proxy.start()
    # The standby takes the partitions once the database is back, and its journal connection,
    # broken by the outage, stops it at its first commit: a journal never goes on after a gap.
    await standby.process.wait_for_line(r"took partitions", 30)
    assert await standby.process.exited(30) != 0
    for _ in managers:  # started again, as a supervisor does
        await cluster.start_manager()
    await outcomes.wait_for(JOBS, 90)
    check_outcomes(outcomes, payloads)
    await each_job_made_once(cluster, JOBS, CHILDREN_PER_JOB)
    await proxy.cut()
