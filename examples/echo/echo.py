"""An echo worker: replies with its input unchanged; fails on `{"fail": true}`.

The reference worker for the conformance kit (docs/protocol.md, "Conformance kit"):

    QUEUE=echo pyworker examples/echo/echo.py:worker
    workflow-manager conformance echo --echo

It serves the queue named by $QUEUE (default `echo`) on $AMQP_URL, prints `listening on <QUEUE>`
once it consumes, and stops after finishing its in-flight requests on SIGTERM.
"""

from __future__ import annotations

import os
from typing import Any

from pyworker import StepContext, Worker

# The queue is fixed when the module loads: a step is registered by its queue name.
QUEUE = os.environ.get("QUEUE", "echo")


class AskedToFail(Exception):
    """The input asked the worker to fail (`"fail": true`)."""


class EchoWorker(Worker):
    """A Worker that says when it consumes, so scripts and tests can wait for it."""

    async def start(self) -> None:
        """Start consuming, then print `listening on <QUEUE>`."""
        await super().start()
        print(f"listening on {QUEUE}", flush=True)


worker = EchoWorker(name=f"echo worker {QUEUE}")


@worker.step(QUEUE)
async def echo(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
    """The input, unchanged; an x-error reply ("asked to fail") when it has `"fail": true`."""
    if data.get("fail") is True:
        raise AskedToFail("asked to fail")
    return data
