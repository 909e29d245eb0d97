"""Sampling the manager with py-spy during a run, and reading the samples back as tables."""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.procs import BenchError

__all__ = ["Profile", "Recorder", "read_profile"]

# Where a frame's file lives -> the layer it belongs to. The first match wins.
_LAYERS = (
    ("workflow_manager/engine/", "workflow_manager.engine (pure state machine)"),
    ("workflow_manager/journal/", "workflow_manager.journal (encoding, group commit)"),
    ("workflow_manager/", "workflow_manager (orchestrator, outbox, transport)"),
    ("aiosqlite/", "aiosqlite + sqlite3 (journal reads and writes)"),
    ("sqlite3/", "aiosqlite + sqlite3 (journal reads and writes)"),
    ("aio_pika/", "aio-pika"),
    ("aiormq/", "aiormq + pamqp (AMQP framing)"),
    ("pamqp/", "aiormq + pamqp (AMQP framing)"),
    ("json/", "json"),
    ("logging/", "logging"),
    ("asyncio/", "asyncio event loop"),
    ("pydantic", "pydantic"),
    ("uuid.py", "uuid"),
)
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*)\)$")


class Recorder:
    """`py-spy record` attached to a process until `stop()`."""

    def __init__(self, proc: asyncio.subprocess.Process, output: Path) -> None:
        self._proc = proc
        self.output = output

    @staticmethod
    def available() -> bool:
        return shutil.which("py-spy") is not None

    @classmethod
    async def attach(cls, pid: int, output: Path, rate_hz: int = 200) -> Recorder:
        """Start sampling `pid` (raw collapsed stacks, per thread, by function: no line numbers)."""
        proc = await asyncio.create_subprocess_exec(
            "py-spy", "record", "--pid", str(pid), "--output", str(output), "--format", "raw",
            "--rate", str(rate_hz), "--nolineno", "--threads",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        await asyncio.sleep(0.5)  # py-spy needs a moment to attach before the work starts
        if proc.returncode is not None:
            raise BenchError("py-spy exited at once (is ptrace allowed here?)")
        return cls(proc, output)

    async def stop(self) -> None:
        """Stop sampling; py-spy writes its file on SIGINT."""
        self._proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(self._proc.communicate(), 60)
        if not self.output.exists():
            raise BenchError(f"py-spy wrote no profile: {out.decode(errors='replace')}")


@dataclass(frozen=True)
class Profile:
    """Sample counts of every thread, and of the main thread (the event loop) by layer/function."""

    samples: int  # the main thread's
    threads: Counter[str]
    layers: Counter[str]
    self_time: Counter[str]
    total_time: Counter[str]

    def percent(self, count: int) -> float:
        """`count` as a percentage of the main thread's samples."""
        return 100.0 * count / self.samples if self.samples else 0.0

    def own_functions(
        self, prefix: str = "workflow_manager/", limit: int = 15
    ) -> list[tuple[str, int]]:
        """Functions of files under `prefix` by inclusive time, minus the start-up chain that
        every sample passes through (`main`, `serve`...)."""
        return [
            (name, n)
            for name, n in self.total_time.most_common()
            if f"({prefix}" in name and n < 0.95 * self.samples
        ][:limit]


def _layer(file: str) -> str:
    return next((layer for marker, layer in _LAYERS if marker in file), "other")


def _function(frame: str) -> tuple[str, str]:
    found = _FRAME.match(frame)
    if found is None:
        return frame, ""
    return frame, found["file"]


def read_profile(path: Path, main_thread: str = "MainThread") -> Profile:
    """Parse py-spy's raw output: `thread (tid): name;frame;...;frame count` per line."""
    threads: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    total_time: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        thread, *frames = stack.split(";")
        name = re.sub(r"^thread \(\w+\):? *", "", thread) or thread
        threads[name] += count
        if name != main_thread or not frames:
            continue
        calls = [_function(frame) for frame in frames]
        leaf, leaf_file = calls[-1]
        self_time[leaf] += count
        layers[_layer(leaf_file)] += count
        for function in {function for function, _ in calls}:
            total_time[function] += count
    return Profile(threads[main_thread], threads, layers, self_time, total_time)
