"""A trigger that names its job, on two partitioned managers: each new id starts its job once,
and the id of a job that ended is answered from the journal by the manager holding its
partition, nothing run again (`Deliveries.on_trigger`: placement finds the id new, or finds
the job and the finished-job check answers for it)."""

from __future__ import annotations

import uuid

import pytest

from ..durability.helpers import CHILDREN_PER_JOB, check_outcomes
from .rig import each_job_made_once, until

OUTCOMES_TIMEOUT_S = 90.0
JOBS = 6


@pytest.mark.timeout(180)
async def test_a_named_job_runs_once_and_a_trigger_again_is_answered_from_the_journal(cluster):
    outcomes = await cluster.outcome_queue()
    await cluster.start_worker()
    first, second = await cluster.start_manager(), await cluster.start_manager()
    await cluster.balanced([first, second])  # a trigger often reaches the other manager
    payloads = {str(uuid.uuid4()): n for n in range(JOBS)}
    for job_id, n in payloads.items():
        await cluster.trigger({"n": n}, job_id, outcomes.queue_name)
    await outcomes.wait_for(JOBS, OUTCOMES_TIMEOUT_S)
    await each_job_made_once(cluster, JOBS, CHILDREN_PER_JOB)  # and their rows committed

    for job_id, n in payloads.items():
        await cluster.trigger({"n": n}, job_id, outcomes.queue_name)
    await until(
        lambda: all(len(outcomes.by_id[job_id]) >= 2 for job_id in payloads),
        "each trigger again answered",
    )
    check_outcomes(outcomes, payloads)  # the answers again: the same status and result
    await each_job_made_once(cluster, JOBS, CHILDREN_PER_JOB)
    submissions = cluster.query(
        "SELECT job_id, count(*) FROM events WHERE kind = 'submitted' AND job_id = ANY(%s)"
        " GROUP BY 1",
        (list(payloads),),
    )
    assert sorted(submissions) == sorted((job_id, 1) for job_id in payloads)
