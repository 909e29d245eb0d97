"""An HTTP echo endpoint and the bridge serving it on $QUEUE: the conformance kit's HTTP worker.

    QUEUE=conformance-http AMQP_URL=amqp://guest:guest@localhost:5672/ \
        python tests/integration/bridge/echo_bridge.py

It starts the echo server (httpserver.echo) on a free port, writes a workflow file with one
HTTP step on $QUEUE calling it, and runs `workflow-manager bridge`'s serve loop in this
process: it prints `bridge: listening on <QUEUE> -> POST http://127.0.0.1:<port>/echo`,
replies with each input unchanged, fails with "asked to fail" when the input has
"fail": true, and exits 0 after draining on SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: find httpserver

from httpserver import StubServer  # noqa: E402

from workflow_manager.bridge.service import BridgeSettings, serve_bridge  # noqa: E402
from workflow_manager.config import load_workflows  # noqa: E402

WORKFLOW = """\
workflows:
  - name: conformance-http
    steps:
      - name: echo
        queue: "{queue}"
        http: {{url: "{url}", timeout: 30}}
"""


async def main() -> None:
    """Serve the echo endpoint through the bridge until SIGTERM."""
    queue = os.environ.get("QUEUE", "conformance-http")
    amqp_url = os.environ.get("AMQP_URL", "amqp://guest:guest@localhost:5672/")
    server = await StubServer().start()
    try:
        with tempfile.TemporaryDirectory() as directory:
            config = Path(directory) / "workflows.yaml"
            config.write_text(WORKFLOW.format(queue=queue, url=server.url("/echo")))
            workflows = load_workflows(config)
        settings = BridgeSettings(amqp_url=amqp_url, concurrency=64)
        await serve_bridge(workflows, settings, os.environ)
    finally:
        await server.close()


if __name__ == "__main__":
    asyncio.run(main())
