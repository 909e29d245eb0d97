"""A partition just taken is held before its adoption has replayed its jobs: until then its
triggers go to its queue (consumed once the adoption is done), not into a memory without them.

A trigger that its dead manager had journaled but not acked comes back on the trigger queue
while a survivor takes that manager's partitions over; answered from memory before the
replay, it was started a second time or answered with the journal's `running`.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from workflow_manager.cluster.handoff import HANDOFF_HEADER, TRIGGER
from workflow_manager.cluster.ownership import Ownership
from workflow_manager.cluster.partitioning import Partitioning, partition_queue
from workflow_manager.config import parse_workflows
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator
from workflow_manager.transport import Outbound
from workflow_manager.transport.memory import MemoryTransport

from .conftest import QUEUE, WORKFLOWS

PARTITIONS = 2


class _Leases:
    """What the orchestrator reads of a lease table when nothing is taken or renewed."""

    owner = "me"
    ttl_s = 10.0


def _job_in(partition: int) -> str:
    partitioning = Partitioning(QUEUE, PARTITIONS)
    return next(i for i in iter(lambda: str(uuid.uuid4()), None) if partitioning.of(i) == partition)


async def test_a_trigger_for_a_partition_being_adopted_waits_in_its_queue(tmp_path: Path) -> None:
    transport = MemoryTransport()
    ownership = Ownership(_Leases(), Partitioning(QUEUE, PARTITIONS))  # type: ignore[arg-type]
    ownership.held[0] = 1
    orchestrator = Orchestrator(
        parse_workflows(WORKFLOWS), ManagerSettings(queue=QUEUE),
        await open_journal(tmp_path / "wm.db"), transport, ownership=ownership,
    )  # fmt: skip
    await orchestrator.start()
    try:
        ownership.held[1] = 1  # taken (Ownership.take); its adoption has not replayed it yet
        job_id = _job_in(1)
        _, handled = transport.deliver(
            f"{QUEUE}.jobs", json.dumps({}).encode(), correlation_id=job_id,
            reply_to="answers", headers={"workflow": "two"},
        )  # fmt: skip
        await handled
        queue = partition_queue(QUEUE, 1)
        handed: list[Outbound] = transport.sent_to(queue)
        assert [m.correlation_id for m in handed] == [job_id]
        assert handed[0].headers[HANDOFF_HEADER] == TRIGGER
        assert transport.sent_to("a") == [] and transport.sent_to("answers") == []
        assert job_id not in orchestrator.state.jobs

        await orchestrator.adopt([1])  # replayed: from now on its queue is consumed here
        _, handled = transport.deliver(
            queue, handed[0].body, correlation_id=job_id, reply_to="answers",
            headers=handed[0].headers,
        )  # fmt: skip
        await handled
        request = await _first(transport, "a")
        assert request.correlation_id == f"{job_id}:a"
    finally:
        await orchestrator.stop()


async def _first(transport: MemoryTransport, queue: str) -> Outbound:
    await transport.wait_for(lambda _: bool(transport.sent_to(queue)))
    return transport.sent_to(queue)[0]
