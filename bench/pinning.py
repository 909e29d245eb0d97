"""`--pin`: the measured process gets a core of its own, everything else shares the rest.

On a small machine (2 cores) the manager, the workers, RabbitMQ and the bench process that
triggers jobs all compete for the same cores, so the manager-to-baseline ratio measures the
contention as much as the manager (issue 25). With `--pin`, the measured process runs alone on
one core: every `workflow_manager serve` the bench starts, and, during the baseline's runs, the
bench process itself (the baseline driver runs in it). RabbitMQ's processes, the workers and the
bench process as the client of the manager (triggering jobs, reading outcomes) share the other
cores. Affinity is per thread on Linux, so each process is pinned thread by thread
(/proc/PID/task), and threads created later inherit their creator's mask.

RabbitMQ's processes are not ours: their old masks are recorded and put back at the end,
whatever happens to the run (`Pinner.restore`, called from a `finally`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.procs import pids_named

__all__ = [
    "BROKER_COMMANDS",
    "Cores",
    "PinError",
    "Pinner",
    "choose_cores",
    "format_cores",
    "pin_process",
    "pinned",
]

# The local RabbitMQ's processes by /proc/<pid>/comm: the Erlang VM, the port mapper and the
# VM's helpers (comm is cut to 15 characters, which none of these reach).
BROKER_COMMANDS = ("beam.smp", "epmd", "erl_child_setup", "inet_gethost")


class PinError(ValueError):
    """`--pin` cannot be honoured on this machine (fewer than 2 usable cores)."""


@dataclass(frozen=True)
class Cores:
    """The measured core and the cores every other process shares."""

    measured: int
    others: frozenset[int]

    def describe(self) -> str:
        """The run's header line, e.g. `pinned: manager/driver on core 0; broker, workers,
        client on cores 1-15`."""
        return (
            f"pinned: manager/driver on core {self.measured}; "
            f"broker, workers, client on {format_cores(self.others)}"
        )


def choose_cores(available: Iterable[int]) -> Cores:
    """The lowest usable core is the measured one, the rest are the others'; PinError with
    fewer than two."""
    usable = sorted(set(available))
    if len(usable) < 2:
        raise PinError(
            f"--pin needs at least 2 usable cores, this process may use {len(usable)} "
            f"({format_cores(usable)})"
        )
    return Cores(usable[0], frozenset(usable[1:]))


def format_cores(cores: Iterable[int]) -> str:
    """`core 3`, `cores 1-15`, `cores 1,3,5-7`: runs of consecutive cores as ranges."""
    ordered = sorted(set(cores))
    runs: list[list[int]] = []
    for core in ordered:
        if runs and core == runs[-1][-1] + 1:
            runs[-1].append(core)
        else:
            runs.append([core])
    text = ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else f"{run[0]}" for run in runs)
    return f"core {text}" if len(ordered) == 1 else f"cores {text}"


def _threads(pid: int) -> list[int]:
    try:
        return [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return []  # the process ended


def pin_process(pid: int, cores: Iterable[int]) -> None:
    """Pin every thread of `pid` to `cores` (a thread that ends meanwhile is skipped)."""
    mask = set(cores)
    for tid in _threads(pid):
        try:
            os.sched_setaffinity(tid, mask)
        except ProcessLookupError:
            continue


def _broker_pids() -> list[int]:
    return [pid for command in BROKER_COMMANDS for pid in pids_named(command)]


@dataclass
class Pinner:
    """Applies `cores` to the run's processes and remembers what to put back."""

    cores: Cores
    _saved: dict[int, set[int]] = field(default_factory=dict)  # RabbitMQ thread -> old mask
    _own: set[int] = field(default_factory=set)  # the bench process's mask before the run

    def start(self) -> str | None:
        """Pin RabbitMQ's threads and the bench process (as the client) to the others; a
        one-line note when RabbitMQ's processes cannot be pinned, else None."""
        self._own = os.sched_getaffinity(0)
        self.client()
        broker = _broker_pids()
        if not broker:
            return "RabbitMQ's processes not found on this machine: only ours are pinned"
        for tid in (tid for pid in broker for tid in _threads(pid)):
            try:
                old = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, self.cores.others)
            except ProcessLookupError:
                continue  # a thread or helper that ended: nothing to pin or restore
            except OSError as exc:  # PermissionError: not our process
                self._restore_broker()
                return f"cannot pin RabbitMQ's processes ({exc}): only ours are pinned"
            self._saved[tid] = old
        return None

    def manager(self, pid: int) -> None:
        """A manager process: the measured core alone."""
        pin_process(pid, {self.cores.measured})

    def helper(self, pid: int) -> None:
        """A worker process: the others' cores."""
        pin_process(pid, self.cores.others)

    def driver(self) -> None:
        """The bench process is about to drive the baseline: the measured core alone."""
        pin_process(os.getpid(), {self.cores.measured})

    def client(self) -> None:
        """The bench process only triggers jobs and reads outcomes: the others' cores."""
        pin_process(os.getpid(), self.cores.others)

    def restore(self) -> None:
        """Put RabbitMQ's masks and the bench process's back (safe to call more than once)."""
        self._restore_broker()
        if self._own:
            pin_process(os.getpid(), self._own)

    def _restore_broker(self) -> None:
        if not self._saved:
            return
        # A helper RabbitMQ started during the run (inet_gethost, say) inherited the others'
        # mask: it gets the mask most of the broker's threads had.
        usual = set(Counter(frozenset(mask) for mask in self._saved.values()).most_common(1)[0][0])
        for tid in (tid for pid in _broker_pids() for tid in _threads(pid)):
            if tid not in self._saved and self._inherited(tid):
                self._saved[tid] = usual
        for tid, mask in list(self._saved.items()):
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                pass  # the thread ended
            del self._saved[tid]

    def _inherited(self, tid: int) -> bool:
        try:
            return os.sched_getaffinity(tid) == self.cores.others
        except OSError:
            return False


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through `pinned`'s finally: RabbitMQ gets its mask


@contextlib.contextmanager
def pinned(cores: Cores) -> Iterator[Pinner]:
    """Pin RabbitMQ and the bench process for the block, printing a line if RabbitMQ cannot be
    pinned; every mask is put back when the block ends, also on an error or SIGTERM."""
    pinner = Pinner(cores)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        note = pinner.start()
        if note is not None:
            print(note, flush=True)
        yield pinner
    finally:
        pinner.restore()
        signal.signal(signal.SIGTERM, previous)
