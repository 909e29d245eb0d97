"""One trace, one tree: the manager's spans and a pyworker's handler spans, over the real broker.

The manager runs in-process (its SpanRecorder on an in-memory exporter) and so does the
pyworker (its own TracerProvider, the same exporter), so every span of the job lands in one
place: the job, each step attempt, the child jobs and the handlers that served them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import aio_pika
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from pyworker import Worker
from workflow_manager.config import parse_workflows
from workflow_manager.engine import Command, JobFinished
from workflow_manager.engine.traceids import job_span_id, step_span_id
from workflow_manager.journal import open_journal
from workflow_manager.orchestrator import ManagerSettings, Orchestrator, step_queues
from workflow_manager.traces.export import SpanRecorder
from workflow_manager.transport import Broker, manager_queues

from .test_tracing_process import WORKFLOW  # the same fan-out: prep, then a child per item


class JobEnd:
    """An observer that is told when a given top-level job has finished."""

    def __init__(self) -> None:
        self.ended: dict[str, asyncio.Event] = {}

    def recovered(self, jobs) -> None:
        """Nothing runs before the test starts its job."""

    def observe(self, commands: Sequence[Command]) -> None:
        for command in commands:
            if isinstance(command, JobFinished) and command.parent_id is None:
                self.ended.setdefault(command.job_id, asyncio.Event()).set()

    async def wait(self, job_id: str, timeout_s: float = 30.0) -> None:
        await asyncio.wait_for(self.ended.setdefault(job_id, asyncio.Event()).wait(), timeout_s)


def _hex(number: int, digits: int) -> str:
    return format(number, f"0{digits}x")


def _parent(span: ReadableSpan) -> str | None:
    return _hex(span.parent.span_id, 16) if span.parent is not None else None


async def test_the_managers_and_the_workers_spans_form_one_tree(amqp_url, unique, tmp_path):
    exporter = InMemorySpanExporter()
    workflows = parse_workflows(WORKFLOW.replace("{p}", unique))
    settings = ManagerSettings(amqp_url=amqp_url, queue=f"{unique}.wm")
    end = JobEnd()
    spans = SpanRecorder(SimpleSpanProcessor(exporter))
    orchestrator = Orchestrator(
        workflows, settings, await open_journal(tmp_path / "wm.db"),
        Broker(amqp_url, settings.prefetch), observers=[spans, end],
    )  # fmt: skip
    worker_provider = TracerProvider()
    worker_provider.add_span_processor(SimpleSpanProcessor(exporter))
    worker = Worker(amqp_url, environ={}, stop_timeout_s=5, tracer_provider=worker_provider)

    @worker.step(f"{unique}.prep")
    async def prep(data: dict) -> dict:
        return {"items": [1, 2, 3]}

    @worker.step(f"{unique}.square")
    async def square(data: dict) -> dict:
        return {"item": data["item"] ** 2}

    await orchestrator.start()
    try:
        await worker.start()
        job_id = await orchestrator.submit("fan", {})
        await end.wait(job_id)
    finally:
        await worker.stop()
        await orchestrator.stop()
        spans.close()
        await _delete_queues(amqp_url, settings.queue, workflows)

    finished = exporter.get_finished_spans()
    by_id = {_hex(s.context.span_id, 16): s for s in finished}
    assert len(by_id) == len(finished), "span ids are unique"
    assert {_hex(s.context.trace_id, 32) for s in finished} == {
        orchestrator_trace(finished, job_id)
    }
    roots = [s for s in finished if _parent(s) is None]
    assert [_hex(s.context.span_id, 16) for s in roots] == [job_span_id(job_id)]
    orphans = [s.name for s in finished if _parent(s) is not None and _parent(s) not in by_id]
    assert orphans == []
    handlers = [s for s in finished if s.kind is SpanKind.CONSUMER]
    assert sorted(s.name for s in handlers) == sorted(
        [f"process {unique}.prep"] + [f"process {unique}.square"] * 3
    )
    # Each handler's span hangs from the manager's span of the attempt it served.
    for handler in handlers:
        attributes = handler.attributes or {}
        served = step_span_id(str(attributes["job.id"]), str(attributes["step"]), 1)
        assert _parent(handler) == served and by_id[served].name == attributes["step"]
    # 1 job + prep + each + 3 children with a square each + the 4 handlers.
    assert len(finished) == 1 + 2 + 3 * 2 + 4


def orchestrator_trace(spans: Sequence[ReadableSpan], job_id: str) -> str:
    """The trace id of the job's own span."""
    (job,) = [s for s in spans if _hex(s.context.span_id, 16) == job_span_id(job_id)]
    return _hex(job.context.trace_id, 32)


async def _delete_queues(amqp_url: str, queue: str, workflows) -> None:
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel()
        for name in (*manager_queues(queue), *step_queues(workflows.values())):
            await channel.queue_delete(name)
