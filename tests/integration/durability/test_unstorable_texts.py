"""A NUL byte in a trigger's `reply_to` (and in a stray reply's correlation id) is stored the
same way by both journals: the manager keeps running, the job completes, its outcome notice is
marked sent and a restart does not publish it again."""

from __future__ import annotations

import uuid

import aio_pika

from .helpers import expected_result, query_journal, unsent

OUTCOME_TIMEOUT_S = 60.0


async def _stray_reply(rig, correlation_id: str) -> None:
    """A reply for no job, as a confused worker might send it."""
    message = aio_pika.Message(b"{}", correlation_id=correlation_id)
    await rig.channel.default_exchange.publish(message, rig.queue)


async def test_a_nul_in_reply_to_neither_stops_the_manager_nor_repeats_the_notice(rig):
    outcomes = await rig.outcome_queue()
    await rig.start_worker()
    manager = await rig.start_manager()
    bad_id, good_id = str(uuid.uuid4()), str(uuid.uuid4())

    await rig.trigger("chaos-counts", {"n": 1}, bad_id, f"{rig.prefix}.gone\x00queue")
    # Its notice goes to a queue nobody can declare: dropped, then marked sent (lazily).
    await manager.wait_for_line(r"dropped a message for", OUTCOME_TIMEOUT_S)
    stray_id = str(uuid.uuid4())
    await _stray_reply(rig, f"{stray_id}\x00:step\x00")
    # Appended after that mark and the stray reply's row: its outcome means both committed.
    await rig.trigger("chaos-counts", {"n": 2}, good_id, outcomes.queue_name)
    await outcomes.wait_for(1, OUTCOME_TIMEOUT_S)

    assert manager.proc.returncode is None, manager.output
    assert "journal write failed" not in manager.output, manager.output
    assert outcomes.by_id[good_id][0].body == expected_result(2)
    job = await rig.get_job(bad_id)
    assert (job["status"], job["result"]) == ("completed", expected_result(1)), job
    assert not [msg_id for msg_id in unsent(rig.db) if bad_id in msg_id], unsent(rig.db)
    notices = query_journal(rig.db, "SELECT msg_id FROM events WHERE kind = 'notified'")
    assert (f"notice:{bad_id}:{rig.prefix}.gone\ufffdqueue",) in notices, notices
    strays = query_journal(rig.db, "SELECT job_id, step FROM events WHERE kind = 'replied'")
    assert (f"{stray_id}\ufffd", "step\ufffd") in strays, strays

    assert await rig.stop_manager() == 0, manager.output
    restarted = await rig.start_manager()
    # Recovery publishes what was pending before it consumes: nothing, this time.
    assert "dropped a message for" not in restarted.output, restarted.output
    assert (await rig.get_job(bad_id))["status"] == "completed"
    assert await rig.stop_manager() == 0, restarted.output
