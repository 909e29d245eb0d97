"""Restart RabbitMQ's app under 50 running jobs: manager and workers reconnect, all jobs end.

This stops the broker for every client on it: do not run it beside other tests of the broker.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid

import pytest

from .helpers import check_outcomes, manager_log, rabbitmqctl, unsent

JOBS = 50
OUTCOMES_TIMEOUT_S = 40.0  # clients retry every 5 s; the jobs need ~10 s of work in all
CHILD_DELAY_S = 0.3  # 500 child steps, 50 at a time: jobs stay in flight for seconds
DOWN_S = 2.0  # how long the broker stays down (the chaos, not a synchronisation)

pytestmark = pytest.mark.skipif(
    shutil.which("rabbitmqctl") is None, reason="needs rabbitmqctl to stop and start RabbitMQ"
)


@pytest.mark.stops_broker
@pytest.mark.timeout(170)
async def test_jobs_complete_across_a_broker_restart(rig):
    outcomes = await rig.outcome_queue()
    worker = await rig.start_worker()
    manager = await rig.start_manager()
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    await asyncio.gather(
        *(
            rig.trigger("chaos-counts", {"n": n, "delay_s": CHILD_DELAY_S}, i, outcomes.queue_name)
            for i, n in payloads.items()
        )
    )
    await outcomes.wait_for(1, 30)
    in_flight = JOBS - outcomes.distinct  # before the stop: stopping takes a while under load
    try:
        await rabbitmqctl("stop_app")
        await asyncio.sleep(DOWN_S)
    finally:
        await rabbitmqctl("start_app")
        await rabbitmqctl("await_startup")
    assert in_flight >= JOBS // 5, f"only {in_flight} jobs were running when the broker stopped"

    assert manager.proc.returncode is None, f"the manager died:\n{manager.output}"
    assert worker.proc.returncode is None, f"the worker died:\n{worker.output}"
    try:
        await outcomes.wait_for(JOBS, OUTCOMES_TIMEOUT_S)
    except AssertionError as exc:
        stuck = sorted(set(payloads) - set(outcomes.by_id))
        raise AssertionError(
            f"{exc}; stuck jobs {stuck}; journaled, never published: {unsent(rig.db)}\n"
            f"{manager_log(manager)}"
        ) from None
    assert manager.proc.returncode is None, f"the manager died:\n{manager.output}"
    check_outcomes(outcomes, payloads)
    assert await rig.stop_manager() == 0, manager.output
    assert await worker.stop() == 0, worker.output
