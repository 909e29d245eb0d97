"""The fuzzer as a background process at idle priority, for the slow test to wait for.

Started once collection is done (tests/fuzz/conftest.py) and run at the lowest CPU priority
(nice 19): it takes only the time the rest of the suite leaves idle (waiting on the broker,
the database, timers), so a whole run fuzzes for minutes without taking longer. Its test runs
last and waits for it to end; run alone, that test simply waits its time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fuzz.seeds import write_seeds

ROOT = Path(__file__).resolve().parents[2]
FUZZ_SECONDS = int(os.environ.get("WM_FUZZ_SECONDS", "240"))
MAX_LEN = 16_384  # room for JSON nested past any limit (a 990-level trigger is ~2 KB)
# What libFuzzer names the inputs that crashed, ran past -timeout, or ran out of memory.
ARTIFACTS = ("crash-*", "timeout-*", "oom-*", "leak-*")


@dataclass
class BackgroundFuzzer:
    """A running `python -m tests.fuzz`, its folder (corpus, artifacts, output) and output."""

    process: subprocess.Popen[bytes]
    folder: Path

    @classmethod
    def start(cls) -> BackgroundFuzzer:
        """Start fuzzing for FUZZ_SECONDS from the seed inputs, at idle priority."""
        folder = Path(tempfile.mkdtemp(prefix="wm-fuzz-"))
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
        return cls(process, folder)

    def wait(self, timeout_s: float) -> int:
        """Wait for the fuzzer to end; its exit code."""
        return self.process.wait(timeout=timeout_s)

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
        """End it if it still runs, and remove its folder."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


FUZZER = pytest.StashKey[BackgroundFuzzer]()
"""Where the session keeps the running fuzzer, for its test."""
