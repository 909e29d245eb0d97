"""Traces with a real manager process: traceparent on every request, trace_id in the API, OTLP.

The test plays the worker (it takes each request off its queue), and for the export it runs
a small OTLP/HTTP receiver (stdlib http.server in a thread) the manager sends its spans to.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aio_pika
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from workflow_manager.engine.traceids import job_span_id, parse_traceparent, step_span_id

WORKFLOW = """
workflows:
  - name: fan
    steps:
      - {name: prep, queue: "{p}.prep"}
      - {name: each, task: sq, depends: [prep]}
    tasks:
      - name: sq
        itemListKey: items
        steps:
          - {name: square, queue: "{p}.square"}
"""
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def _traceparent(message: aio_pika.abc.AbstractMessage) -> str:
    value = (message.headers or {}).get("traceparent")
    return value.decode() if isinstance(value, bytes) else str(value)


async def _play_the_worker(system, items: list[int]) -> list[aio_pika.abc.AbstractMessage]:
    """Answer prep with `items` and each square request; the requests, in order."""
    prep = await system.take("prep")
    await system.answer(prep, json.dumps({"items": items}).encode())
    squares = [await system.take("square") for _ in items]
    for square in squares:
        item = json.loads(square.body)["item"]
        await system.answer(square, json.dumps({"item": item * item}).encode())
    return [prep, *squares]


async def test_every_request_carries_the_triggers_trace_and_the_api_shows_it(system):
    sys = await system(WORKFLOW)
    job_id = str(uuid.uuid4())
    queue = await sys.reply_queue()
    trigger = aio_pika.Message(
        b"{}", correlation_id=job_id, reply_to=queue.name,
        headers={"workflow": "fan", "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
    )  # fmt: skip
    await sys.channel.default_exchange.publish(trigger, sys.trigger_queue)
    requests = await _play_the_worker(sys, [2, 3])
    outcome = await sys.next_outcome(queue)
    assert outcome.status == "completed" and outcome.body == {"items": [4, 9]}

    for request in requests:
        parsed = parse_traceparent(_traceparent(request))
        assert parsed is not None and parsed.trace_id == CALLER_TRACE, _traceparent(request)
        job, step = request.correlation_id.split(":")
        assert parsed.span_id == step_span_id(job, step, 1)
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    assert job["trace_id"] == CALLER_TRACE
    child_id = requests[1].correlation_id.split(":")[0]
    assert (await sys.http.get(f"/api/job/{child_id}")).json()["trace_id"] == CALLER_TRACE


async def test_a_job_submitted_over_http_without_a_trace_starts_one(system):
    sys = await system(WORKFLOW)
    job_id = str(uuid.uuid4())
    response = await sys.http.post(f"/api/workflow/fan?id={job_id}", json={})
    assert response.status_code == 200, response.text
    (prep,) = [await sys.take("prep")]
    parsed = parse_traceparent(_traceparent(prep))
    assert parsed is not None
    assert (await sys.http.get(f"/api/job/{job_id}")).json()["trace_id"] == parsed.trace_id


class _Receiver:
    """An OTLP/HTTP trace receiver: keeps each POST to /v1/traces; answers 200.

    Requested before `system`, so it outlives the manager and its last export at shutdown.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self.arrived = asyncio.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                kept = (self.path, self.headers.get("Content-Type", ""), body)
                loop.call_soon_threadsafe(receiver.keep, kept)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                """Quiet: the test reads what arrived instead."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def keep(self, request: tuple[str, str, bytes]) -> None:
        self.requests.append(request)
        self.arrived.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[tuple[str, dict, object]]:
        """(service name, span attributes, span) of every span received."""
        found = []
        for _, _, body in self.requests:
            export = ExportTraceServiceRequest.FromString(body)
            for resource_spans in export.resource_spans:
                service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        attributes = {a.key: _value(a.value) for a in span.attributes}
                        found.append((service["service.name"], attributes, span))
        return found


def _value(value) -> object:
    return value.int_value if value.HasField("int_value") else value.string_value


@pytest.fixture
async def receiver() -> AsyncIterator[_Receiver]:
    made = _Receiver(asyncio.get_running_loop())
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    yield made
    made.server.shutdown()
    made.server.server_close()


async def test_with_an_otlp_endpoint_the_manager_exports_its_spans(receiver, system):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "200"}
    sys = await system(WORKFLOW, manager_env=env)
    job_id = str(uuid.uuid4())
    queue = await sys.reply_queue()
    await sys.trigger("fan", {}, job_id, queue.name)
    await _play_the_worker(sys, [5])
    assert (await sys.next_outcome(queue)).status == "completed"

    async with asyncio.timeout(20):
        while {a.get("job.id") for _, a, _ in receiver.spans()} != {job_id, _child(receiver)}:
            receiver.arrived.clear()
            await receiver.arrived.wait()
    path, content_type, _ = receiver.requests[0]
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    spans = receiver.spans()
    assert {service for service, _, _ in spans} == {"workflow-manager"}
    named = {(span.name, a.get("job.id")): (a, span) for _, a, span in spans}
    child = _child(receiver)
    assert set(named) == {("fan", job_id), ("prep", job_id), ("each", job_id), ("sq", child),
                          ("square", child)}  # fmt: skip
    attributes, prep = named["prep", job_id]
    assert attributes == {
        "workflow": "fan", "job.id": job_id, "job.root_id": job_id, "step": "prep",
        "attempt": 1, "outcome": "completed",
    }  # fmt: skip
    assert prep.span_id.hex() == step_span_id(job_id, "prep", 1)
    assert prep.parent_span_id.hex() == job_span_id(job_id)
    assert prep.end_time_unix_nano > prep.start_time_unix_nano
    assert named["fan", job_id][0]["outcome"] == "completed"
    assert named["sq", child][1].parent_span_id.hex() == step_span_id(job_id, "each", 0)


def _child(receiver: _Receiver) -> str | None:
    """The child job's id, from its span (once it has arrived)."""
    for _, attributes, span in receiver.spans():
        if span.name == "sq":
            return str(attributes["job.id"])
    return None
