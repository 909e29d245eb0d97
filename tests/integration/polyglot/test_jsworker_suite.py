"""jsworker's own suite (`node --test` in jsworker/, against the real RabbitMQ), run by pytest.

The Node.js tests cover reply-after-confirm, x-error replies, ctx fields, reconnecting after the
broker closes the worker's connection, and draining on SIGTERM. Skipped locally without Node.js,
failed in CI (CI=true) as the other integration tests are.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

JSWORKER_DIR = Path(__file__).resolve().parents[3] / "jsworker"
SUITE_TIMEOUT_S = 110  # under pytest's per-test 120 s; the suite itself takes about 15 s


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        message = f"`{tool}` is not installed (jsworker needs Node.js 18+ and npm)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def _run(
    args: list[str], timeout_s: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=JSWORKER_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def test_jsworker_node_suite_passes(amqp_url: str) -> None:
    node = _require("node")
    if not (JSWORKER_DIR / "node_modules" / "amqplib").is_dir():
        result = _run([_require("npm"), "ci", "--no-audit", "--no-fund"], timeout_s=60)
        assert result.returncode == 0, f"npm ci failed:\n{result.stdout}\n{result.stderr}"
    # The tests find the broker through AMQP_URL; rabbitmqctl (reconnect tests) must be on PATH.
    env = {**os.environ, "AMQP_URL": amqp_url}
    result = _run([node, "--test"], timeout_s=SUITE_TIMEOUT_S, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"node --test failed in jsworker/:\n{output}"
