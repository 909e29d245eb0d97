"""The `pyworker MODULE:OBJECT` command, run as a real process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

WORKER_FILE = """\
import asyncio

from shouting import shout  # a sibling module: the file's directory is importable

from pyworker import StepContext, Worker

worker = Worker()


def helper():
    return "not a worker"


@worker.step("cli-echo")  # served as $QUEUE_PREFIX + "cli-echo"
def echo(data: dict, ctx: StepContext) -> dict:
    return {"echo": shout(data["text"]), "attempt": ctx.attempt}


@worker.step("cli-slow")
async def slow(data: dict) -> dict:
    await asyncio.sleep(data["work_s"])  # a long-running step
    return {"slept": data["work_s"]}
"""


def _pyworker(*args: str, cwd: Path, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "pyworker", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.fixture
def worker_file(tmp_path: Path) -> Path:
    """A worker module (and a sibling it imports) in a temporary directory."""
    (tmp_path / "shouting.py").write_text("def shout(text):\n    return text.upper()\n")
    (tmp_path / "broken.py").write_text("import os\n\nworker = undefined_name\n")
    path = tmp_path / "my_workers.py"
    path.write_text(WORKER_FILE)
    return path


def test_help_shows_usage_and_examples(tmp_path):
    result = _pyworker("--help", cwd=tmp_path)

    assert result.returncode == 0
    assert "MODULE:OBJECT" in result.stdout
    assert "pyworker examples/word-counts/workers.py:worker" in result.stdout


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no-colon-here", "expected MODULE:OBJECT, got 'no-colon-here'"),
        ("no_such_module_xyz:worker", "no module named 'no_such_module_xyz'"),
        ("missing/file.py:worker", "no such file: 'missing/file.py'"),
        ("my_workers.py:wrker", "has no attribute 'wrker' (Worker objects in it: worker)"),
        ("my_workers.py:helper", "'my_workers.py:helper' is a function, not a pyworker.Worker"),
        ("my_workers:helper", "is a function, not a pyworker.Worker"),
        ("broken.py:worker", "NameError: name 'undefined_name' is not defined"),
    ],
)
def test_a_bad_target_is_a_clear_error_with_exit_code_2(worker_file, target, message):
    result = _pyworker(target, cwd=worker_file.parent)

    assert result.returncode == 2
    assert result.stderr.startswith("pyworker: error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_url_in_the_environment_exits_2(worker_file):
    env = {**os.environ, "AMQP_URL": "http://localhost:5672/"}
    result = _pyworker("my_workers.py:worker", cwd=worker_file.parent, env=env)

    assert result.returncode == 2
    assert "environment variable AMQP_URL: 'http://localhost:5672/' is not an AMQP URL" in (
        result.stderr
    )


def test_an_unreachable_broker_exits_1(worker_file):
    result = _pyworker(
        "my_workers.py:worker",
        "--amqp-url",
        "amqp://guest:guest@127.0.0.1:1/",
        cwd=worker_file.parent,
    )

    assert result.returncode == 1
    assert "cannot connect to RabbitMQ at amqp://guest:******@127.0.0.1:1/" in result.stderr
    assert "Traceback" not in result.stderr


@dataclass
class CliWorker:
    """A `pyworker` process serving the worker file, its output going to `log_path`."""

    process: subprocess.Popen[bytes]
    log_path: Path

    async def terminate(self) -> int:
        """Send SIGTERM and wait for the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.to_thread(self.process.wait, 60)

    @property
    def output(self) -> str:
        return self.log_path.read_text()


@pytest.fixture
def cli_worker(amqp_url, caller, worker_file, unique) -> Iterator[CliWorker]:
    """`pyworker my_workers.py:worker` with QUEUE_PREFIX set to this test's prefix."""
    for step in ("cli-echo", "cli-slow"):  # the worker declares both; delete both afterwards
        caller.queue(step)
    log_path = worker_file.parent / "worker.log"
    command = [sys.executable, "-m", "pyworker", f"{worker_file}:worker", "--amqp-url", amqp_url]
    options = ["--prefetch", "3", "--log-level", "info"]
    env = {**os.environ, "QUEUE_PREFIX": f"{unique}."}
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*command, *options], cwd=worker_file.parent, env=env, stdout=log, stderr=log
        )
    try:
        yield CliWorker(process, log_path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def test_the_cli_serves_a_worker_file_until_sigterm(caller, cli_worker):
    await caller.request(caller.queue("cli-echo"), {"text": "hello"}, attempt=2)
    reply = await caller.reply(timeout_s=60)

    assert reply.body == {"echo": "HELLO", "attempt": 2}, cli_worker.output
    assert await cli_worker.terminate() == 0, cli_worker.output
    assert "SIGTERM received" in cli_worker.output
    assert "step=step attempt=2" in cli_worker.output


async def test_sigterm_lets_the_in_flight_request_finish_and_reply(caller, cli_worker):
    queue = caller.queue("cli-slow")
    await caller.request(queue, {"work_s": 1.5})
    async with asyncio.timeout(60):  # until the worker has taken the request off the queue
        while await caller.declare(queue) != 0:
            await asyncio.sleep(0.02)

    assert await cli_worker.terminate() == 0, cli_worker.output
    assert (await caller.reply()).body == {"slept": 1.5}, cli_worker.output
    assert "waiting for 1 in-flight request(s)" in cli_worker.output
