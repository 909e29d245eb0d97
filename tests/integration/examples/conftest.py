"""Fixtures for the example tests: Node.js for the JavaScript worker, `pyworker exec`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from ..harness import Process

ROOT = Path(__file__).resolve().parents[3]
JS_DIR = ROOT / "examples" / "word-counts" / "js"


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        message = f"`{tool}` is not installed (the JS example worker needs Node.js 18+ and npm)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def node() -> str:
    """Path of `node`, with the worker's dependencies installed once per session.

    `npm ci` runs every session: it installs a copy of the repository's jsworker (a `file:`
    dependency), which would otherwise go stale when jsworker changes.
    """
    node_path = _require("node")
    npm = _require("npm")
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"npm ci failed in {JS_DIR}:\n{result.stdout}\n{result.stderr}")
    return node_path


@pytest.fixture
async def node_worker(
    node: str, amqp_url: str
) -> AsyncIterator[Callable[[str], Awaitable[Process]]]:
    """Start the Node.js worker on a queue and wait until it listens; stopped after the test."""
    started: list[Process] = []

    async def start(queue: str) -> Process:
        process = await Process.start(
            "js worker", node, str(JS_DIR / "worker.js"), env={"QUEUE": queue, "AMQP_URL": amqp_url}
        )
        started.append(process)
        await process.wait_for_line("listening")
        return process

    yield start
    for process in started:
        assert await process.stop() == 0, process.output


@pytest.fixture
async def exec_worker(amqp_url: str) -> AsyncIterator[Callable[..., Awaitable[Process]]]:
    """Start `pyworker exec QUEUE -- COMMAND...` and wait until it listens; stopped afterwards."""
    started: list[Process] = []

    async def start(queue: str, *command: str) -> Process:
        process = await Process.start(
            "exec worker",
            sys.executable, "-m", "pyworker", "exec", queue, "--amqp-url", amqp_url,
            "--", *command,
        )  # fmt: skip
        started.append(process)
        await process.wait_for_line(f"listening on {queue}")
        return process

    yield start
    for process in started:
        assert await process.stop() == 0, process.output
