"""The database going away for 5 s under two managers (through a proxy the test cuts: the
shared PostgreSQL keeps running for everyone else): the managers stop taking work rather than
go on without their journal, report not ready, rejoin once it is back (the same processes,
without a restart), lose nothing, and finish every job exactly once."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from ..durability.helpers import CHILDREN_PER_JOB, check_outcomes
from .pgproxy import PgProxy
from .rig import each_job_made_once, rejoins

JOBS = 30
OUTAGE_S = 5.0


@pytest.mark.timeout(180)
async def test_managers_stop_on_a_database_outage_and_rejoin_losing_nothing(cluster):
    proxy = PgProxy(cluster.db)
    await proxy.start()
    cluster.manager_db = proxy.url
    outcomes = await cluster.outcome_queue()
    await cluster.start_worker()
    managers = [await cluster.start_manager(), await cluster.start_manager()]
    await cluster.balanced(managers)
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    for job_id, n in payloads.items():
        await cluster.trigger({"n": n, "delay_s": 0.2}, job_id, outcomes.queue_name)
    await outcomes.wait_for(3, 60)

    await proxy.cut()
    # Each learns of it at its next commit or lease renewal, stops taking work, and waits.
    for manager in managers:
        await manager.process.wait_for_line(r"rejoining as a standby", 30)
        async with httpx.AsyncClient(base_url=manager.api_url, timeout=10) as http:
            ready = await http.get("/readyz")
        assert ready.status_code == 503, ready.text
    assert outcomes.distinct < JOBS, "every job ended before the outage"
    await asyncio.sleep(OUTAGE_S)  # the outage itself: how long the database stays away
    await proxy.start()
    for manager in managers:
        await manager.process.wait_for_line(r"rejoined: running", 60)
    await outcomes.wait_for(JOBS, 90)
    check_outcomes(outcomes, payloads)
    await each_job_made_once(cluster, JOBS, CHILDREN_PER_JOB)
    await cluster.balanced(managers)
    assert all(m.process.proc.returncode is None for m in managers), "a manager exited"
    for manager in managers:
        async with httpx.AsyncClient(base_url=manager.api_url, timeout=10) as http:
            assert (await http.get("/readyz")).status_code == 200
        # Counted once: its commit failed (database) or its leases ran out first (lease).
        counted = await rejoins(manager)
        assert sum(counted.values()) == 1 and set(counted) <= {"database", "lease"}, counted
    await proxy.cut()
