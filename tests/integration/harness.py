"""Real processes for end-to-end tests: the manager (`workflow-manager serve`) and pyworkers."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Process:
    """A child process whose combined output is collected line by line, for awaiting log lines."""

    name: str
    proc: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls, name: str, *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> Process:
        """Start `args` in `cwd` (default: the repository) with the test environment plus `env`."""
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        process = cls(name, proc)
        process._reader = asyncio.create_task(process._read())
        return process

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            async with self._changed:
                self.lines.append(raw.decode(errors="replace").rstrip())
                self._changed.notify_all()
        async with self._changed:
            self._changed.notify_all()

    async def wait_for_line(self, pattern: str, timeout_s: float = 20.0, after: int = 0) -> str:
        """The first output line matching `pattern` (from line number `after` on: lines printed
        since `len(process.lines)` was taken); fails with the output so far if none comes."""
        regex = re.compile(pattern)

        def found() -> str | None:
            return next((line for line in self.lines[after:] if regex.search(line)), None)

        async def wait() -> str:
            async with self._changed:
                while (line := found()) is None:
                    if self.proc.returncode is not None and self._reader and self._reader.done():
                        raise AssertionError(f"{self.name} exited; output:\n{self.output}")
                    await self._changed.wait()
                return line

        try:
            return await asyncio.wait_for(wait(), timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"{self.name}: no line matching {pattern!r} in {timeout_s}s; output:\n{self.output}"
            ) from None

    @property
    def output(self) -> str:
        """Everything the process printed so far."""
        return "\n".join(self.lines)

    async def exited(self, timeout_s: float = 15.0) -> int:
        """Wait for the process to exit by itself (no signal sent); its exit code."""
        await asyncio.wait_for(self.proc.wait(), timeout_s)
        if self._reader is not None:
            await self._reader
        return self.proc.returncode if self.proc.returncode is not None else -1

    async def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> int:
        """Signal the process and wait for it to exit; kill it if it does not."""
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout_s)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            await self._reader
        return self.proc.returncode if self.proc.returncode is not None else -1


@dataclass
class Manager:
    """A running `workflow-manager serve` and where to reach it."""

    process: Process
    queue: str
    api_url: str


async def start_manager(
    config: Path,
    queue: str,
    amqp_url: str,
    db: Path | str,
    log_level: str = "info",
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Manager:
    """Start the manager on a free port and wait until it serves HTTP.

    `extra_args` go after serve's own (e.g. `--log-format json`); `env` adds to the environment.
    """
    port = free_port()
    process = await Process.start(
        "manager",
        sys.executable, "-m", "workflow_manager", "serve",
        "--config", str(config), "--queue", queue, "--amqp-url", amqp_url,
        "--db", str(db), "--port", str(port), "--log-level", log_level, *extra_args,
        env=env,
    )  # fmt: skip
    await process.wait_for_line(r"HTTP API on")
    return Manager(process, queue, f"http://127.0.0.1:{port}")


async def start_worker(target: str, amqp_url: str, env: dict[str, str] | None = None) -> Process:
    """Start `pyworker TARGET` as a process."""
    return await Process.start(
        f"pyworker {target}",
        sys.executable, "-m", "pyworker", target, "--amqp-url", amqp_url,
        env=env,
    )  # fmt: skip


async def take_one(queue: Any, timeout_s: float = 20) -> Any:
    """The next message on an aio-pika queue, acked; fails when none comes in time.

    Not a queue iterator: a message delivered while an iterator's consumer is being cancelled
    reaches its buffer after the buffer was handed back, and stays unacked, unseen by every
    later take (a test then waits for it in vain). Here a message that arrives after the one
    taken goes back to the queue, whenever it arrives."""
    taken: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def arrived(message: Any) -> None:
        if taken.done():
            await message.nack(requeue=True)
        else:
            taken.set_result(message)

    tag = await queue.consume(arrived)
    try:
        message = await asyncio.wait_for(taken, timeout_s)
    except TimeoutError:
        raise AssertionError(f"nothing arrived on {queue.name}") from None
    finally:
        await queue.cancel(tag)
    await message.ack()
    return message


async def cli(*args: str) -> tuple[int, str, str]:
    """Run `workflow-manager ARGS`; return (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "workflow_manager", *args, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()
