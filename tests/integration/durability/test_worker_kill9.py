"""SIGKILL the worker holding a request: RabbitMQ gives it to the other worker, the job ends."""

from __future__ import annotations

import asyncio
import signal
import uuid

SLEEP_S = 3.0


async def test_request_of_a_killed_worker_is_redelivered_to_the_other(rig):
    outcomes = await rig.outcome_queue()
    workers = [await rig.start_worker(prefetch=1), await rig.start_worker(prefetch=1)]
    await rig.start_manager()
    job_id = str(uuid.uuid4())
    working = rf"working {job_id}:slow redelivered="
    await rig.trigger("slow-one", {"n": 7, "sleep_s": SLEEP_S}, job_id, outcomes.queue_name)

    # Whichever worker RabbitMQ chose says so first; that one dies mid-step.
    waits = {asyncio.create_task(w.wait_for_line(working, 20)): w for w in workers}
    done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    first = next(iter(done))
    victim = waits[first]
    survivor = next(w for w in workers if w is not victim)
    assert first.result().endswith("redelivered=False"), first.result()
    assert await victim.stop(signal.SIGKILL) == -signal.SIGKILL

    line = await survivor.wait_for_line(working, 20)
    assert line.endswith("redelivered=True"), line
    await outcomes.wait_for(1, SLEEP_S + 20)
    [outcome] = outcomes.by_id[job_id]
    assert (outcome.status, outcome.body) == ("completed", {"done": 21})
    # The victim never finished the step: only the survivor did it.
    assert not [line for line in victim.lines if "done in" in line], victim.output
    assert [line for line in survivor.lines if "done in" in line], survivor.output
    assert await rig.stop_manager() == 0, rig.manager.output
    assert await survivor.stop() == 0, survivor.output
