"""The benchmark still works: it measures every figure and cleans up.

The whole runs go through tests/integration/benchsmall.py (`--quick`'s path on smaller sizes,
the same lines); `python -m bench --quick` itself runs pinned."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from bench.procs import pids_named
from tests.pgdatabase import fresh_database

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"\s+[0-9][0-9,.]* \S+\s+baseline "
# One pattern per figure; a fan-out figure comes once per fan-out size (at least two of them).
FIGURES = [
    r"throughput, [0-9,]+ word-counts jobs",
    r"throughput, [0-9,]+ word-counts jobs: steps",
    r"manager CPU per step \(throughput run\)",
    r"latency, [0-9,]+ jobs one at a time: p50",
    r"latency, [0-9,]+ jobs one at a time: p99",
    r"13-step linear, [0-9,]+ jobs",
    r"recovery, [0-9,]+ running jobs: start until consuming",
]
# The fork and bulk scenarios (issue 28): one line per figure, absolute (no baseline).
FORK = [
    rf"fork, [0-9,]+ children: {what}"
    for what in ("POST until 201", "10th child request", "child requests sent")
]
BULK = [
    rf"bulk cancel, [0-9,]+ running jobs: {what}"
    for what in ("POST until 202", "until finished", "jobs cancelled", "manager peak RSS")
]
FAN_OUT = ["time", "manager peak RSS", "RSS growth per child", "journal size"]
# The managers scenario (with --db): one line for jobs/s and one for CPU per step, each setup.
MANAGERS = ["one manager, SQLite", "one manager, PostgreSQL P=2", "two managers, PostgreSQL P=2"]
CPU = ": CPU per step"
SMALL = [sys.executable, "-m", "tests.integration.benchsmall"]  # `python -m bench --quick`, smaller


def _queues_left(prefix: str) -> list[str]:
    listing = subprocess.run(
        ["rabbitmqctl", "-q", "--no-table-headers", "list_queues", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [name for name in listing.stdout.split() if name.startswith(prefix)]


@pytest.mark.timeout(300)
def test_the_quick_benchmark_prints_every_figure_and_deletes_its_queues(amqp_url):
    done = subprocess.run(
        [*SMALL, "--amqp-url", amqp_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    lines = done.stdout.splitlines()
    for pattern in FIGURES + FORK + BULK:
        matching = [line for line in lines if re.match(pattern + NUMBER, line)]
        assert len(matching) == 1, f"not one line for {pattern!r}:\n{output}"
    counts = {
        what: sum(
            bool(re.match(rf"fan-out, [0-9,]+ children: {what}{NUMBER}", line)) for line in lines
        )
        for what in FAN_OUT
    }
    assert min(counts.values()) >= 2 and len(set(counts.values())) == 1, (counts, output)
    assert re.search(r"^targets: \d+ of \d+ met$", done.stdout, re.MULTILINE), output
    prefix = re.search(r"^queues: (\S+)\*", done.stdout, re.MULTILINE)
    assert prefix is not None, output
    if shutil.which("rabbitmqctl") is not None:
        assert _queues_left(prefix.group(1)) == []


@pytest.mark.timeout(300)
def test_the_quick_benchmark_keeps_its_journals_in_postgresql_with_db(amqp_url):
    with fresh_database() as url:
        done = subprocess.run(
            [*SMALL, "--amqp-url", amqp_url, "--db", url,
             "--only", "throughput,fanout,recovery,managers", "--partitions", "2"],
            cwd=ROOT, capture_output=True, text=True, timeout=280, check=False,
        )  # fmt: skip
        with psycopg.connect(url) as conn:
            left = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench%'")
            schemas = left.fetchall()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "PostgreSQL journals" in done.stdout.splitlines()[0], output
    managers = [rf"[0-9,]+ jobs, {setup}{what}" for setup in MANAGERS for what in ("", CPU)]
    for pattern in (FIGURES[0], FIGURES[-1], r"fan-out, [0-9,]+ children: journal size", *managers):
        assert [line for line in done.stdout.splitlines() if re.match(pattern + NUMBER, line)], (
            f"no line for {pattern!r}:\n{output}"
        )
    assert schemas == [], f"schemas left behind: {schemas}"


def _broker_masks() -> dict[int, set[int]]:
    """Every RabbitMQ thread's CPU mask, by thread id."""
    masks = {}
    for pid in pids_named("beam.smp") + pids_named("epmd"):
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                masks[int(task.name)] = os.sched_getaffinity(int(task.name))
            except OSError:
                continue  # the thread ended
    return masks


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--pin needs 2 cores")
@pytest.mark.timeout(180)
def test_the_pinned_benchmark_says_so_and_puts_rabbitmqs_cores_back(amqp_url):
    before = _broker_masks()
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--pin", "--only", "throughput",
         "--amqp-url", amqp_url],
        cwd=ROOT, capture_output=True, text=True, timeout=160, check=False,
    )  # fmt: skip
    after = _broker_masks()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert re.search(r"^pinned: manager/driver on core \d+; broker, workers, client on cores? ",
                     done.stdout, re.MULTILINE), output  # fmt: skip
    assert [line for line in done.stdout.splitlines() if re.match(FIGURES[0] + NUMBER, line)]
    kept = [tid for tid in before if tid in after]  # a broker restarted meanwhile has new ones
    assert {tid: after[tid] for tid in kept} == {tid: before[tid] for tid in kept}, output


def test_the_managers_scenario_without_db_is_a_usage_error():
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "managers"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--only managers needs --db postgresql://" in done.stderr
