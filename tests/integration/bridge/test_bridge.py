"""`workflow-manager bridge` as a real process: real RabbitMQ, a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

from .httpserver import HttpRequest, HttpResponse, StubServer

REQUEST_TIMEOUT_S = 10.0


def _workflow(steps: list[tuple[str, str]]) -> str:
    """A workflow file with one HTTP step per (queue, http mapping in YAML flow style)."""
    lines = ["workflows:", "  - name: bridged", "    steps:"]
    for i, (queue, http) in enumerate(steps):
        lines += [f"      - name: s{i}", f"        queue: {queue}", f"        http: {http}"]
    return "\n".join(lines) + "\n"


async def _received(server: StubServer) -> HttpRequest:
    return await asyncio.wait_for(server.requests.get(), REQUEST_TIMEOUT_S)


async def test_the_input_is_posted_as_json_and_the_answer_is_the_reply(caller, bridge, http_server):
    queue = caller.queue("http-echo")
    process = await bridge(_workflow([(queue, f"{{url: '{http_server.url('/score?v=1')}'}}")]))
    await process.wait_for_line(f"listening on {queue} -> POST http://127.0.0.1:")
    payload = {"text": "Grüße, 東京", "n": [1, 2.5, None]}

    correlation_id = await caller.request(queue, payload, attempt=2, step="score")
    request = await _received(http_server)
    reply = await caller.reply()

    assert request.method == "POST" and request.path == "/score?v=1"
    assert request.json() == payload
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-wm-step"] == "score"
    assert request.headers["x-wm-attempt"] == "2"
    assert request.headers["x-wm-job-id"] == correlation_id.rsplit(":", 1)[0]
    assert reply.body == payload
    assert reply.correlation_id == correlation_id
    assert reply.headers == {"x-attempt": 2}
    await process.stop()
    assert await caller.declare(queue) == 0, "the request was not acked"


async def test_failures_are_x_errors_naming_the_status_and_the_body(caller, bridge, http_server):
    answers = {
        "/fail": HttpResponse(
            503, b"<html>down for maintenance</html>", "text/html", "Unavailable"
        ),
        "/text": HttpResponse(200, b"plain words", "text/plain"),
        "/list": HttpResponse(200, b"[1, 2]"),
    }

    async def handler(request: HttpRequest) -> HttpResponse:
        return answers[request.path]

    http_server.handler = handler
    queues = {path: caller.queue(f"http{path.replace('/', '-')}") for path in answers}
    steps = [
        (queue, f"{{url: '{http_server.url(path)}', method: PUT}}")
        for path, queue in queues.items()
    ]
    process = await bridge(_workflow(steps))
    for queue in queues.values():
        await process.wait_for_line(f"listening on {queue}")
    target = f"PUT http://127.0.0.1:{http_server.port}"

    errors = {}
    for path, queue in queues.items():
        await caller.request(queue, {"n": 1}, attempt=4)
        reply = await caller.reply()
        assert reply.headers["x-attempt"] == 4
        errors[path] = (reply.headers["x-error-type"], reply.headers["x-error"])

    assert errors == {
        "/fail": (
            "HttpStatusError",
            f"HttpStatusError: {target}/fail answered 503 Unavailable: "
            "'<html>down for maintenance</html>'",
        ),
        "/text": (
            "HttpBodyError",
            f"HttpBodyError: {target}/text answered 200 OK with a body that is not JSON: "
            "'plain words'",
        ),
        "/list": (
            "HttpBodyError",
            f"HttpBodyError: {target}/list answered 200 OK with a JSON list, not an object: "
            "'[1, 2]' (an HTTP step's answer is its output: a JSON object)",
        ),
    }
    await process.stop()
    for queue in queues.values():
        assert await caller.declare(queue) == 0
    assert "Traceback" not in process.output


async def test_a_request_past_the_step_timeout_is_an_x_error(caller, bridge, http_server):
    never = asyncio.Event()

    async def hang(request: HttpRequest) -> HttpResponse:
        await never.wait()
        return HttpResponse()

    http_server.handler = hang
    queue = caller.queue("http-slow")
    process = await bridge(
        _workflow([(queue, f"{{url: '{http_server.url('/slow')}', timeout: 0.5}}")])
    )
    await process.wait_for_line(f"listening on {queue}")

    await caller.request(queue, {})
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == "HttpTransportError"
    assert reply.headers["x-error"] == (
        f"HttpTransportError: POST http://127.0.0.1:{http_server.port}/slow: no answer within"
        " 0.5s (the step's http.timeout)"
    )


async def test_a_refused_connection_is_an_x_error(caller, bridge, http_server):
    url = http_server.url("/gone")
    await http_server.close()  # nothing listens on that port any more
    queue = caller.queue("http-gone")
    process = await bridge(_workflow([(queue, f"{{url: '{url}'}}")]))
    await process.wait_for_line(f"listening on {queue}")

    await caller.request(queue, {})
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == "HttpTransportError"
    assert reply.headers["x-error"].startswith(f"HttpTransportError: POST {url} failed: ")


SECRET = "s3cret-token-4f9a"


async def test_header_variables_are_expanded_and_never_logged(caller, bridge, http_server):
    async def echo_headers(request: HttpRequest) -> HttpResponse:
        # A careless endpoint that repeats the credentials in an error page.
        return HttpResponse(
            401, f"bad token {request.headers['authorization']}".encode(), "text/plain"
        )

    queue = caller.queue("http-secret")
    headers = "{Authorization: 'Bearer ${API_TOKEN}', X-Plain: visible}"
    http = f"{{url: '{http_server.url('/a')}', headers: {headers}}}"
    process = await bridge(
        _workflow([(queue, http)]), env={"API_TOKEN": SECRET}, args=("--log-level", "debug")
    )
    await process.wait_for_line(f"listening on {queue}")

    await caller.request(queue, {"ok": True})
    request = await _received(http_server)
    reply = await caller.reply()
    http_server.handler = echo_headers
    await caller.request(queue, {"ok": False})
    refused = await caller.reply()
    await process.stop()

    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["x-plain"] == "visible"
    assert reply.body == {"ok": True}
    assert refused.headers["x-error"].endswith("answered 401 OK: 'bad token Bearer ******'")
    assert SECRET not in process.output
    assert SECRET not in json.dumps(refused.headers) + json.dumps(refused.body)


async def test_a_missing_header_variable_stops_the_bridge_at_start(bridge, http_server):
    headers = "{Authorization: 'Bearer ${NO_SUCH_TOKEN_VAR}'}"
    http = f"{{url: '{http_server.url()}', headers: {headers}}}"
    process = await bridge(_workflow([("q-never-declared", http)]))

    assert await asyncio.wait_for(process.proc.wait(), 30) == 1
    await process.stop()
    assert (
        "error: workflow 'bridged', step 's0': header 'Authorization' names ${NO_SUCH_TOKEN_VAR},"
        " which is not set; export NO_SUCH_TOKEN_VAR=... before starting the bridge"
    ) in process.output
    assert "Traceback" not in process.output


async def test_an_invalid_file_stops_the_bridge_with_its_lines(bridge):
    process = await bridge(_workflow([("q", "{url: 'ftp://x', timeout: -1}")]))

    assert await asyncio.wait_for(process.proc.wait(), 30) == 1
    await process.stop()
    assert "bridge-0.yaml:6: workflow 'bridged', step 's0': http.url: 'ftp://x'" in process.output
    assert "http.timeout: must be more than 0 seconds, got -1" in process.output


async def test_concurrency_bounds_the_requests_in_flight(caller, bridge, http_server):
    release = asyncio.Event()
    in_flight = 0
    peak = 0
    arrived = asyncio.Queue()

    async def hold(request: HttpRequest) -> HttpResponse:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        arrived.put_nowait(None)
        await release.wait()
        in_flight -= 1
        return HttpResponse(200, request.body)

    http_server.handler = hold
    queue_a, queue_b = caller.queue("http-a"), caller.queue("http-b")
    url = http_server.url("/hold")
    process = await bridge(
        _workflow([(queue_a, f"{{url: '{url}'}}"), (queue_b, f"{{url: '{url}'}}")]),
        args=("--concurrency", "3"),
    )
    await process.wait_for_line(f"listening on {queue_b}")

    for i in range(8):
        await caller.request(queue_a if i % 2 else queue_b, {"i": i})
    for _ in range(3):
        await asyncio.wait_for(arrived.get(), REQUEST_TIMEOUT_S)
    held = in_flight
    release.set()
    replies = [await caller.reply() for _ in range(8)]

    assert held == 3 and peak == 3
    assert sorted(reply.body["i"] for reply in replies) == list(range(8))
