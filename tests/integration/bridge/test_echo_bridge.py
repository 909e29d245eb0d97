"""tests/integration/bridge/echo_bridge.py keeps the conformance kit's echo-worker contract."""

from __future__ import annotations

import sys

from ..harness import ROOT, Process

SCRIPT = ROOT / "tests" / "integration" / "bridge" / "echo_bridge.py"


async def test_the_echo_bridge_echoes_fails_on_request_and_exits_0(caller, amqp_url):
    queue = caller.queue("conformance-http")
    process = await Process.start(
        "echo bridge", sys.executable, str(SCRIPT), env={"QUEUE": queue, "AMQP_URL": amqp_url}
    )
    try:
        await process.wait_for_line(f"listening on {queue}")
        payload = {"text": "é" * 1000, "nested": {"list": [1, None, True]}}

        await caller.request(queue, payload, attempt=1)
        echoed = await caller.reply()
        await caller.request(queue, {"fail": True, "x": 1}, attempt=2)
        failed = await caller.reply()
    finally:
        code = await process.stop()

    assert echoed.body == payload and echoed.headers == {"x-attempt": 1}
    assert failed.headers["x-attempt"] == 2
    assert failed.headers["x-error"].endswith("answered 500 Internal Server Error: 'asked to fail'")
    assert code == 0, process.output
    assert await caller.declare(queue) == 0
