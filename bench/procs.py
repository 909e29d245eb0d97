"""Child processes of a benchmark run (the manager, the workers) and what /proc says about them."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

import aio_pika

__all__ = [
    "BenchError",
    "broker_pid",
    "Child",
    "cpu_s",
    "memory_kb",
    "pids_named",
    "reset_peak",
    "start_manager",
    "start_workers",
    "thread_cpu_s",
    "wait_for_consumers",
]

ROOT = Path(__file__).resolve().parent.parent
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """The benchmark could not measure: a job failed or timed out, a process died."""


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Child:
    """A child process whose output is read as it comes (the last lines are kept for errors)."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process) -> None:
        self.name = name
        self.proc = proc
        self.tail: deque[str] = deque(maxlen=40)
        self.api_url = ""  # a manager's HTTP API (set by start_manager)
        self._waiters: list[tuple[re.Pattern[str], asyncio.Future[str]]] = []
        self._reader = asyncio.create_task(self._read(), name=f"read {name}")

    @classmethod
    async def start(
        cls,
        name: str,
        *args: str,
        env: dict[str, str] | None = None,
        pin: Callable[[int], None] | None = None,
    ) -> Child:
        """Start `args` in the repository root with the current environment plus `env`;
        `pin(pid)` right after the start (before the process has threads of its own)."""
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        if pin is not None:
            pin(proc.pid)
        return cls(name, proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            self.tail.append(line)
            for regex, future in self._waiters:
                if not future.done() and regex.search(line):
                    future.set_result(line)
        for _, future in self._waiters:
            if not future.done():
                future.set_exception(BenchError(f"{self.name} exited:\n{self.output}"))

    @property
    def output(self) -> str:
        """The last lines the process printed."""
        return "\n".join(self.tail)

    async def wait_for_line(self, pattern: str, timeout_s: float) -> str:
        """The next output line matching `pattern`; BenchError if the process exits or times out."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiters.append((re.compile(pattern), future))
        if self._reader.done():
            raise BenchError(f"{self.name} exited:\n{self.output}")
        try:
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise BenchError(
                f"{self.name}: no line matching {pattern!r} in {timeout_s}s:\n{self.output}"
            ) from None

    async def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, wait (SIGKILL after `timeout_s`); returns the exit code."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout_s)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        await self._reader
        return self.proc.returncode if self.proc.returncode is not None else -1


async def start_manager(
    config: Path,
    db: str,
    queue: str,
    amqp_url: str,
    partitions: int | None = None,
    pin: Callable[[int], None] | None = None,
) -> Child:
    """`python -m workflow_manager serve` on a free port; returns once it serves (HTTP API up).

    Its HTTP API's address is the child's `api_url`; `pin` as for `Child.start`.
    """
    port = free_port()
    args = [
        sys.executable, "-m", "workflow_manager", "serve", "--config", str(config), "--db", db,
        "--queue", queue, "--port", str(port), "--amqp-url", amqp_url,
    ]  # fmt: skip
    if partitions is not None:
        args += ["--partitions", str(partitions)]
    manager = await Child.start("manager", *args, pin=pin)
    manager.api_url = f"http://127.0.0.1:{port}"
    await manager.wait_for_line(r"HTTP API on", timeout_s=60)
    if pin is not None:
        pin(manager.pid)  # again: a thread started before the first call kept the old mask
    return manager


async def start_workers(
    count: int, prefix: str, prefetch: int, amqp_url: str, pin: Callable[[int], None] | None = None
) -> list[Child]:
    """`count` pyworker processes serving bench/workers.py with queue names `prefix` + step;
    `pin` as for `Child.start`."""
    return [
        await Child.start(
            f"worker {n}",
            sys.executable,
            "-m",
            "pyworker",
            "bench/workers.py:worker",
            "--queue-prefix",
            prefix,
            "--prefetch",
            str(prefetch),
            "--amqp-url",
            amqp_url,
            "--log-level",
            "WARNING",
            pin=pin,
        )  # fmt: skip
        for n in range(count)
    ]


async def wait_for_consumers(
    channel: aio_pika.abc.AbstractChannel, queues: list[str], consumers: int, timeout_s: float
) -> None:
    """Poll until each queue has `consumers` consumers (the workers log nothing at WARNING)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    for name in queues:
        while True:
            # Declared exactly as the manager and the workers declare it, so this never conflicts.
            queue = await channel.declare_queue(name, durable=True)
            if queue.declaration_result.consumer_count >= consumers:
                break
            if loop.time() > deadline:
                raise BenchError(f"queue {name!r} has no worker after {timeout_s}s")
            await asyncio.sleep(0.1)


def _stat_cpu_s(path: str) -> float:
    fields = Path(path).read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S  # utime, stime


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used, all threads."""
    return _stat_cpu_s(f"/proc/{pid}/stat")


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds by thread: `main` (the event loop) and `thread <tid>` for the others."""
    result = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = "main" if task.name == str(pid) else f"thread {task.name}"
        try:
            result[name] = _stat_cpu_s(str(task / "stat"))
        except OSError:
            continue  # the thread ended
    return result


def pids_named(command: str) -> list[int]:
    """The processes whose command (/proc/<pid>/comm) is `command`, e.g. `postgres`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == command:
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def broker_pid() -> int | None:
    """The local RabbitMQ's Erlang VM (beam.smp), to read its CPU time; None if not found."""
    return next(iter(pids_named("beam.smp")), None)


def memory_kb(pid: int | str, field: str) -> int:
    """A /proc/<pid>/status figure in kB, e.g. VmRSS (now) or VmHWM (peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise BenchError(f"/proc/{pid}/status has no {field}")


def reset_peak(pid: int | str) -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+); False when the kernel does not allow it."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True
