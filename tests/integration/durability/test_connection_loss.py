"""The manager loses its broker connection while a message is in hand: its effects still go out.

A deterministic version of what the broker restart hits by chance: the journal's write lock is
held (a slow disk) while the manager handles a trigger, and the broker closes the manager's
connection before the commit returns. The commit then goes through; once the manager has
reconnected, the job's first requests must be published and the job must complete.
"""

from __future__ import annotations

import shutil
import uuid

import pytest

from .helpers import (
    broker_connection_of,
    check_outcomes,
    manager_log,
    rabbitmqctl,
    unsent,
    write_lock,
)

pytestmark = pytest.mark.skipif(
    shutil.which("rabbitmqctl") is None or shutil.which("ss") is None,
    reason="needs rabbitmqctl and ss to close the manager's broker connection",
)
OUTCOME_TIMEOUT_S = 15.0  # aio-pika reconnects after 5 s; the job itself takes well under 1 s


class UnpublishedAfterReconnect(AssertionError):
    """Journaled requests left unpublished after a reconnect: the failure this test guards."""


async def test_effects_of_a_message_in_hand_survive_a_lost_connection(rig):
    outcomes = await rig.outcome_queue()
    await rig.start_worker()
    manager = await rig.start_manager(log_level="debug")
    connection = await broker_connection_of(manager.proc.pid)
    job_id = str(uuid.uuid4())

    with write_lock(rig.db):  # released within the manager's 5 s busy timeout
        await rig.trigger("chaos-counts", {"n": 3}, job_id, outcomes.queue_name)
        await manager.wait_for_line(rf"trigger {job_id} for chaos-counts", 5)
        await rabbitmqctl("close_connection", connection, "durability test: lost mid-commit")
        await manager.wait_for_line(r"CONNECTION_FORCED", 5)

    assert manager.proc.returncode is None, manager_log(manager)

    # The robust connection comes back within seconds (aio-pika retries every 5 s).
    try:
        await outcomes.wait_for(1, OUTCOME_TIMEOUT_S)
    except AssertionError as exc:
        pending = unsent(rig.db)
        error = UnpublishedAfterReconnect if pending else AssertionError
        raise error(
            f"{exc}; journaled, never published: {pending}\n{manager_log(manager)}"
        ) from None
    check_outcomes(outcomes, {job_id: 3})
    assert await rig.stop_manager() == 0, manager.output
