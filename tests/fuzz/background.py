"""The fuzzer as a background process at idle priority, for the slow test to wait for.

Started once collection is done (tests/fuzz/conftest.py) and run at the lowest CPU priority
(nice 19): it takes only the time the rest of the suite leaves idle (waiting on the broker,
the database, timers), so a whole run fuzzes for minutes without taking longer. Its test runs
last and waits for it to end; run alone, that test simply waits its time.

Under pytest-xdist (scripts/test.sh runs the suite on two workers) the controller runs the one
fuzzer, from when the workers have collected, and whichever worker gets the test waits for it:
the controller holds a lock on a file in the fuzzer's folder until it has written the fuzzer's
exit code there (`publish`), and the worker takes that lock (`attach`, `wait`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fuzz.seeds import write_seeds

ROOT = Path(__file__).resolve().parents[2]
FUZZ_SECONDS = int(os.environ.get("WM_FUZZ_SECONDS", "240"))
MAX_LEN = 16_384  # room for JSON nested past any limit (a 990-level trigger is ~2 KB)
# What libFuzzer names the inputs that crashed, ran past -timeout, or ran out of memory.
ARTIFACTS = ("crash-*", "timeout-*", "oom-*", "leak-*")
LOCK = "running.lock"  # held by the controller (xdist) while the fuzzer runs
EXIT_CODE = "exit-code"  # the fuzzer's exit code, written by the controller before it lets go


@dataclass
class BackgroundFuzzer:
    """A running `python -m tests.fuzz`, its folder (corpus, artifacts, output) and output.

    `process` is None in an xdist worker: the fuzzer is the controller's, seen through `folder`.
    """

    folder: Path
    process: subprocess.Popen[bytes] | None = None
    _watcher: threading.Thread | None = field(default=None, repr=False)

    @classmethod
    def start(cls, folder: Path | None = None) -> BackgroundFuzzer:
        """Start fuzzing for FUZZ_SECONDS from the seed inputs, at idle priority (in `folder`,
        else a new temporary one)."""
        folder = folder or Path(tempfile.mkdtemp(prefix="wm-fuzz-"))
        corpus = folder / "corpus"
        write_seeds(corpus)
        command = [
            sys.executable, "-m", "tests.fuzz", f"-max_total_time={FUZZ_SECONDS}",
            f"-max_len={MAX_LEN}", "-timeout=10", "-rss_limit_mb=2048",
            f"-artifact_prefix={folder}/", str(corpus),
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k != "WM_FUZZ_FINDINGS"}
        with (folder / "output.txt").open("wb") as output:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
            )  # fmt: skip
        # The lowest priority, set from here: a preexec_fn would make the (threaded) test
        # process fork without exec first.
        os.setpriority(os.PRIO_PROCESS, process.pid, 19)
        return cls(folder, process)

    @classmethod
    def attach(cls, folder: Path) -> BackgroundFuzzer:
        """The fuzzer another process (xdist's controller) started and publishes in `folder`."""
        return cls(folder)

    def publish(self) -> None:
        """Let other processes wait for this fuzzer: hold LOCK until it has ended and its exit
        code is in EXIT_CODE (a watcher thread writes it, then lets go of the lock)."""
        assert self.process is not None
        process = self.process
        lock = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)  # taken before any test can run, so before any wait

        def watch() -> None:
            try:
                code = process.wait()
                written = self.folder / f"{EXIT_CODE}.tmp"
                written.write_text(str(code))
                written.replace(self.folder / EXIT_CODE)  # whole, or not there at all
            finally:
                os.close(lock)  # lets the waiting worker in

        self._watcher = threading.Thread(target=watch, name="fuzzer-watcher", daemon=True)
        self._watcher.start()

    def wait(self, timeout_s: float) -> int:
        """Wait for the fuzzer to end; its exit code."""
        if self.process is not None:
            return self.process.wait(timeout=timeout_s)
        # The controller's fuzzer: its lock is let go once the exit code is written. flock has
        # no timeout, so a thread takes it and this waits on the thread's event.
        lock_path = self.folder / LOCK
        assert lock_path.exists(), f"no fuzzer was published in {self.folder}"
        taken = threading.Event()

        def take() -> None:
            with lock_path.open("rb") as lock:
                fcntl.flock(lock, fcntl.LOCK_SH)
                taken.set()

        threading.Thread(target=take, name="fuzzer-wait", daemon=True).start()
        if not taken.wait(timeout_s):
            raise subprocess.TimeoutExpired("python -m tests.fuzz (the controller's)", timeout_s)
        return int((self.folder / EXIT_CODE).read_text())

    @property
    def output(self) -> str:
        """What it printed, but the long list of instrumented modules."""
        text = (self.folder / "output.txt").read_text(errors="replace")
        return "\n".join(
            line for line in text.splitlines() if not line.startswith("INFO: Instrumenting")
        )

    @property
    def crashers(self) -> list[Path]:
        """The inputs it saved as crashing (or too slow, or too big)."""
        return [path for pattern in ARTIFACTS for path in sorted(self.folder.glob(pattern))]

    def stop(self) -> None:
        """End it if it still runs, and remove its folder (the owner's to do, not a worker's)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self._watcher is not None:
            self._watcher.join()
        shutil.rmtree(self.folder, ignore_errors=True)


FUZZER = pytest.StashKey[BackgroundFuzzer]()
"""Where the session keeps the running fuzzer, for its test."""

TEST = "test_the_fuzzer_finds_no_crasher"  # the slow test that waits for the fuzzer
WORKER_INPUT = "wm_fuzz_folder"  # xdist: the controller's fuzzer folder, sent to each worker
_FOLDER = pytest.StashKey[Path]()  # xdist: the controller's fuzzer folder


def atheris_installed() -> bool:
    """Whether the fuzzer can run here (atheris is Linux-only)."""
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def folder_for_workers(config: pytest.Config) -> Path:
    """xdist's controller: the folder its fuzzer will run in, the same for every worker."""
    if _FOLDER not in config.stash:
        config.stash[_FOLDER] = Path(tempfile.mkdtemp(prefix="wm-fuzz-"))
    return config.stash[_FOLDER]


def start_for_workers(config: pytest.Config, ids: list[str]) -> None:
    """xdist's controller, once a worker has collected `ids`: start the fuzzer (once) if its test
    is among them; it is published before the controller hands out the first test."""
    if FUZZER in config.stash or not any(i.endswith(f"::{TEST}") for i in ids):
        return
    if atheris_installed():
        fuzzer = BackgroundFuzzer.start(folder_for_workers(config))
        fuzzer.publish()
        config.stash[FUZZER] = fuzzer


def stop_for_workers(config: pytest.Config) -> None:
    """xdist's controller, at the end: stop its fuzzer and remove the folder."""
    fuzzer = config.stash.get(FUZZER, None)
    if fuzzer is not None:
        fuzzer.stop()
    folder = config.stash.get(_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
