"""Retention: the manager deletes finished jobs older than the retention period by itself."""

from __future__ import annotations

import time
import uuid

import aio_pika

from workflow_manager.config import parse_workflows
from workflow_manager.engine import EngineState, JobSubmitted, StepReplied, apply
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator, step_queues
from workflow_manager.recorder import record
from workflow_manager.transport import Broker, manager_queues

WORKFLOW = """
workflows:
  - name: one
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def _finished_job(journal, state, at: float) -> str:
    job_id = str(uuid.uuid4())
    pinned = state.current["one"]
    for event in (
        JobSubmitted(job_id, "one", {}, at, definition=pinned),
        StepReplied(job_id, "only", b"{}", at + 1),
    ):
        _, commands = apply(state, event)
        result = record(event, commands, "wm")
        result.batch.sent.extend((m.message_id, at) for m in result.outbound if m.message_id)
        await journal.append(result.batch)
    return job_id


async def test_finished_jobs_past_retention_are_deleted(amqp_url, unique, tmp_path):
    workflows = parse_workflows(WORKFLOW.replace("{p}", unique))
    now = time.time()
    journal = await open_journal(tmp_path / "wm.db")
    state = EngineState.from_workflows(workflows)
    old = await _finished_job(journal, state, now - 3 * 86_400)
    recent = await _finished_job(journal, state, now - 600)
    await journal.close()

    settings = ManagerSettings(amqp_url=amqp_url, queue=f"{unique}.wm", retention_days=1)
    journal = await open_journal(tmp_path / "wm.db")
    orchestrator = Orchestrator(workflows, settings, journal, Broker(amqp_url, settings.prefetch))
    await orchestrator.start()
    try:
        await orchestrator.prune()  # the background pass may have run first: either way, gone
        assert await journal.job(old) is None
        assert await journal.job(recent) is not None
        assert await journal.events_of(old) == []
        assert (await orchestrator.find_job(recent)).status == "completed"
    finally:
        await orchestrator.stop()
        connection = await aio_pika.connect(amqp_url)
        async with connection:
            channel = await connection.channel()
            queues = [*manager_queues(settings.queue), *step_queues(workflows.values())]
            for name in queues:
                await channel.queue_delete(name)
