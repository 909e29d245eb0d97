"""Fixtures for the example tests: Node.js for the JavaScript worker, `pyworker exec`."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
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
def node(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Path of `node`, with the worker's dependencies installed once per session.

    `npm ci` runs every session: it installs a copy of the repository's jsworker (a `file:`
    dependency), which would otherwise go stale when jsworker changes. Under pytest-xdist it
    runs once for all the workers, under a lock: a second `npm ci` would delete node_modules
    under the other worker's running JS workers.
    """
    node_path = _require("node")
    npm = _require("npm")
    workerinput = getattr(request.config, "workerinput", None)
    # xdist's workers share their base temporary folder's parent, and the run's id.
    shared = tmp_path_factory.getbasetemp().parent if workerinput else None
    with _npm_lock(shared):
        done = shared / f"npm-ci-{workerinput['testrunuid']}" if shared and workerinput else None
        if done is not None and done.exists():
            return node_path
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
        if done is not None:
            done.touch()
    return node_path


@contextmanager
def _npm_lock(folder: Path | None) -> Iterator[None]:
    """An exclusive lock on `folder`/npm-ci.lock for the block (nothing to lock without one)."""
    if folder is None:
        yield
        return
    with (folder / "npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


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
