"""`pyworker exec QUEUE -- COMMAND` as a real process, with real commands and the real RabbitMQ."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from ..harness import ROOT, Process

ECHO = ROOT / "examples" / "exec" / "echo.sh"

ExecFactory = Callable[..., Awaitable[Process]]


@pytest.fixture
async def exec_worker(amqp_url: str) -> AsyncIterator[ExecFactory]:
    """Start `pyworker exec` processes; each is stopped (and must exit 0) at teardown."""
    started: list[Process] = []

    async def start(queue: str, *command: str, options: tuple[str, ...] = ()) -> Process:
        process = await Process.start(
            f"pyworker exec {queue}",
            sys.executable, "-m", "pyworker", "exec", queue, "--amqp-url", amqp_url,
            *options, "--", *command,
        )  # fmt: skip
        started.append(process)
        await process.wait_for_line(f"listening on {queue}")
        return process

    yield start
    for process in started:
        assert await process.stop() == 0, process.output


def _script(directory: Path, name: str, body: str) -> str:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


async def test_the_command_gets_the_input_on_stdin_and_its_stdout_is_the_reply(caller, exec_worker):
    queue = caller.queue("exec-echo")
    worker = await exec_worker(queue, str(ECHO))
    payload = {"text": "Grüße, 東京", "n": [1, 2.5, None], "nested": {"ok": True}}

    correlation_id = await caller.request(queue, payload, attempt=2)
    reply = await caller.reply()

    assert reply.body == payload
    assert reply.correlation_id == correlation_id
    assert reply.headers == {"x-attempt": 2}
    assert reply.content_type == "application/json" and reply.persistent
    await worker.stop()
    assert await caller.declare(queue) == 0, "the request was not acked"


async def test_a_non_zero_exit_is_an_x_error_with_the_end_of_stderr(caller, exec_worker):
    queue = caller.queue("exec-fail")
    worker = await exec_worker(queue, str(ECHO))

    await caller.request(queue, {"fail": True}, attempt=3)
    reply = await caller.reply()

    assert reply.headers["x-attempt"] == 3
    assert reply.headers["x-error-type"] == "CommandFailed"
    assert reply.headers["x-error"] == "CommandFailed: echo.sh exited with code 1: asked to fail"
    assert reply.body["error"]["type"] == "CommandFailed"
    await worker.stop()
    assert await caller.declare(queue) == 0, "the failed request was not acked"
    assert "Traceback" not in worker.output


async def test_a_long_stderr_is_cut_to_its_last_lines(caller, exec_worker, tmp_path):
    queue = caller.queue("exec-noisy")
    noisy = 'i=0; while [ $i -lt 2000 ]; do echo "log line $i" >&2; i=$((i+1)); done; exit 7\n'
    await exec_worker(queue, _script(tmp_path, "noisy.sh", noisy))

    await caller.request(queue, {})
    error = (await caller.reply()).headers["x-error"]

    assert error.startswith("CommandFailed: noisy.sh exited with code 7: ...log line ")
    assert error.endswith("log line 1999")
    assert len(error) < 2100


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("echo 'not json'", "InvalidResult: step.sh printed invalid JSON on stdout"),
        ("echo '[1, 2]'", "InvalidResult: step.sh printed a JSON list on stdout, not an object"),
    ],
    ids=["text", "list"],
)
async def test_stdout_that_is_not_a_json_object_is_an_x_error_saying_what_it_got(
    caller, exec_worker, tmp_path, stdout, expected
):
    queue = caller.queue("exec-bad-output")
    await exec_worker(queue, _script(tmp_path, "step.sh", f"cat >/dev/null\n{stdout}\n"))

    await caller.request(queue, {})
    reply = await caller.reply()

    assert reply.headers["x-error"].startswith(expected)
    assert reply.headers["x-error-type"] == "InvalidResult"


def _dead(pid: int) -> bool:
    """The process is gone or a zombie (killed, not yet reaped by init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def test_a_command_past_its_timeout_is_killed_with_its_children(
    caller, exec_worker, tmp_path
):
    queue = caller.queue("exec-slow")
    pid_file = tmp_path / "child.pid"
    # The child holds stdout open: killing only the shell would leave the reply waiting.
    slow = f"sleep 60 &\necho $! > {pid_file}\nwait\n"
    script = _script(tmp_path, "slow.sh", slow)
    worker = await exec_worker(queue, script, options=("--timeout", "1"))

    await caller.request(queue, {})
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == "CommandTimeout"
    assert reply.headers["x-error"] == (
        "CommandTimeout: slow.sh ran longer than the 1s timeout and was killed "
        "(raise --timeout if it needs more time)"
    )
    assert _dead(int(pid_file.read_text())), "the command's child process was left running"
    await worker.stop()
    assert await caller.declare(queue) == 0


async def test_concurrency_runs_that_many_commands_at_once_and_no_more(
    caller, exec_worker, tmp_path
):
    queue = caller.queue("exec-parallel")
    running = tmp_path / "running"
    running.mkdir()
    # Each run records how many runs are going when it starts, then waits (up to 3 s) until
    # it has company, so that runs overlap whenever the worker allows it.
    body = f"""cat >/dev/null
touch {running}/$$
now=$(ls {running} | wc -l)
i=0
while [ "$(ls {running} | wc -l)" -lt 2 ] && [ $i -lt 60 ]; do sleep 0.05; i=$((i+1)); done
rm {running}/$$
printf '{{"running": %d}}\\n' "$now"
"""
    await exec_worker(queue, _script(tmp_path, "overlap.sh", body), options=("--concurrency", "2"))

    for _ in range(4):
        await caller.request(queue, {})
    seen = [(await caller.reply()).body["running"] for _ in range(4)]

    assert max(seen) == 2, seen
    assert os.listdir(running) == []


async def test_a_missing_command_is_a_usage_error_before_connecting(amqp_url):
    process = await Process.start(
        "pyworker exec",
        sys.executable, "-m", "pyworker", "exec", "q", "--amqp-url", amqp_url,
        "--", "./no-such-step.sh",
    )  # fmt: skip

    assert await asyncio.wait_for(process.proc.wait(), 30) == 2
    await process.stop()  # collects the rest of its output
    assert "error: command './no-such-step.sh' not found (no such file" in process.output
    assert "Traceback" not in process.output


async def test_sigterm_lets_a_running_command_finish_and_reply_then_exits_0(
    caller, exec_worker, tmp_path
):
    queue = caller.queue("exec-drain")
    go = tmp_path / "go"
    # Waits (up to 10 s) for the test's go-ahead, so SIGTERM arrives while it runs.
    body = (
        f"cat >/dev/null\ni=0\nwhile [ ! -e {go} ] && [ $i -lt 200 ]; do\n"
        "  sleep 0.05; i=$((i+1))\ndone\necho '{\"finished\": true}'\n"
    )
    worker = await exec_worker(
        queue, _script(tmp_path, "wait.sh", body), options=("--log-level", "DEBUG")
    )

    await caller.request(queue, {})
    await worker.wait_for_line("received on")
    worker.proc.send_signal(signal.SIGTERM)
    await worker.wait_for_line("SIGTERM received: stopping after in-flight requests")
    go.touch()
    reply = await caller.reply()

    assert reply.body == {"finished": True}
    # It exits by itself: a second SIGTERM (stop()) while it is still closing would end it at once.
    assert await worker.exited() == 0, worker.output
    assert await caller.declare(queue) == 0
