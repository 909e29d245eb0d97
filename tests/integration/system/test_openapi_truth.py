"""The OpenAPI document tells the truth: schemathesis (every check on) against a real manager.

Bounded so the suite stays fast (a few seconds a run): a few examples per operation, and a
fixed seed so a failure reproduces. Run with and without an API token (sent as a header).
`openapi_hooks.py` tells schemathesis the one rule OpenAPI cannot express.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent

TOKEN = "tok-" + uuid.uuid4().hex
MAX_EXAMPLES = 12
RUN_TIMEOUT_S = 60.0

MANUAL = """
workflows:
  - name: manual
    steps:
      - {name: hand, queue: "{p}.hand"}
"""


async def schemathesis(api_url: str, workdir: Path, *extra: str) -> tuple[int, str]:
    """`st run` on the manager's /openapi.json with every check; (exit code, output).

    It runs in `workdir`: schemathesis and hypothesis leave their state directories there.
    """
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "openapi_hooks",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "schemathesis.cli", "run", f"{api_url}/openapi.json",
        "--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", "12",
        "--generation-database", "none", "--request-timeout", "10", "--no-color",
        # An endless event stream cannot be checked request by request: its 400s are tested
        # in tests/unit/events and tests/integration/events, its schema in the unit tests.
        "--exclude-path", "/api/events", *extra,
        cwd=workdir, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        raise AssertionError(f"schemathesis ran over {RUN_TIMEOUT_S}s:\n{out.decode()}") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


async def documented_operations(api_url: str, token: str | None) -> int:
    """How many operations /openapi.json documents, less the excluded event stream."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient() as client:
        answer = await client.get(f"{api_url}/openapi.json", headers=headers)
    answer.raise_for_status()
    paths = answer.json()["paths"]
    return sum(len(ops) for path, ops in paths.items() if path != "/api/events")


@pytest.mark.parametrize("token", [None, TOKEN], ids=["open", "token"])
async def test_the_api_answers_as_its_openapi_document_says(system, token, tmp_path):
    env = {"WM_API_TOKEN": token} if token else None
    sys_ = await system(MANUAL, manager_env=env)
    auth = ("--header", f"Authorization: Bearer {token}") if token else ()
    code, out = await schemathesis(sys_.manager.api_url, tmp_path, *auth)
    assert code == 0, out
    # Every documented operation was tested (the count follows the document: GET and POST
    # /ui/login are there only with a token), none left out but the event stream.
    assert f"Tested: {await documented_operations(sys_.manager.api_url, token)}" in out, out
    assert " failed" not in out and "passed" in out, out
    assert TOKEN not in sys_.manager.process.output
