"""Fixtures for the Go worker: the `go` toolchain and Debian's packaged amqp091-go and lib/pq."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from ..harness import Process

ROOT = Path(__file__).resolve().parents[3]
GOWORKER_DIR = ROOT / "goworker"
GO_EXAMPLE_DIR = ROOT / "examples" / "word-counts" / "go"
# Where golang-github-rabbitmq-amqp091-go-dev puts the library; the go.mod files replace to it.
AMQP091_SRC = Path("/usr/share/gocode/src/github.com/rabbitmq/amqp091-go")
X_TEXT_SRC = Path("/usr/share/gocode/src/golang.org/x/text")  # golang-golang-x-text-dev
LIB_PQ_SRC = Path("/usr/share/gocode/src/github.com/lib/pq")  # golang-github-lib-pq-dev
SETUP_HINT = (
    "run scripts/setup.sh (apt-get install golang-go golang-github-rabbitmq-amqp091-go-dev "
    "golang-golang-x-text-dev golang-github-lib-pq-dev)"
)


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def go_env() -> dict[str, str]:
    """The environment for `go`: offline, no module proxy, no checksum database."""
    return {**os.environ, "GOPROXY": "off", "GOSUMDB": "off"}


@pytest.fixture(scope="session")
def go() -> str:
    """Path of `go`, once the packaged Go sources the modules replace to are known to be there."""
    path = shutil.which("go")
    if path is None:
        _missing(f"`go` is not installed; {SETUP_HINT}")
    for source in (AMQP091_SRC, X_TEXT_SRC, LIB_PQ_SRC):
        if not (source / "go.mod").is_file():
            _missing(f"{source.name} is not installed at {source}; {SETUP_HINT}")
    return path


def run_go(
    go: str, cwd: Path, *args: str, env: dict[str, str] | None = None, timeout_s: float = 100
) -> str:
    """Run `go ARGS` in `cwd` and return its output; fail the test with it when go fails."""
    result = subprocess.run(
        [go, *args], cwd=cwd, env={**go_env(), **(env or {})}, capture_output=True, text=True,
        timeout=timeout_s, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(
            f"`go {' '.join(args)}` failed in {cwd} (exit {result.returncode}):\n"
            f"{result.stdout}\n{result.stderr}",
            pytrace=False,
        )
    return result.stdout + result.stderr


@pytest.fixture(scope="session")
def go_word_counts_binary(go: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The word-counts example's Go worker, built once per session."""
    binary = tmp_path_factory.mktemp("go-word-counts") / "segment-word-counts"
    run_go(go, GO_EXAMPLE_DIR, "build", "-o", str(binary), ".")
    return binary


@pytest.fixture
async def go_worker(
    go_word_counts_binary: Path, amqp_url: str
) -> AsyncIterator[Callable[[str], Awaitable[Process]]]:
    """Start the Go worker on a queue and wait until it listens; stopped (drained) after."""
    started: list[Process] = []

    async def start(queue: str) -> Process:
        process = await Process.start(
            "go worker", str(go_word_counts_binary), env={"QUEUE": queue, "AMQP_URL": amqp_url}
        )
        started.append(process)
        await process.wait_for_line(f"listening on {queue}")
        return process

    yield start
    for process in started:
        assert await process.stop() == 0, process.output
