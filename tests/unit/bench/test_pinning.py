"""`python -m bench --pin`: choosing the cores, naming them, and refusing a 1-core machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench import cli
from bench.pinning import Cores, PinError, choose_cores, format_cores, pin_process
from bench.readme import _results


def test_the_lowest_core_is_measured_and_the_rest_are_the_others():
    assert choose_cores({1, 0}) == Cores(0, frozenset({1}))
    assert choose_cores([7, 3, 5, 4]) == Cores(3, frozenset({4, 5, 7}))


@pytest.mark.parametrize("available", [set(), {2}])
def test_fewer_than_two_cores_cannot_be_pinned(available):
    with pytest.raises(PinError, match="at least 2 usable cores"):
        choose_cores(available)


@pytest.mark.parametrize(
    ("cores", "text"),
    [
        ([3], "core 3"),
        ([1, 2], "cores 1-2"),
        (range(1, 16), "cores 1-15"),
        ([7, 1, 3, 5, 6], "cores 1,3,5-7"),
    ],
)
def test_cores_read_as_runs(cores, text):
    assert format_cores(cores) == text


def test_the_header_names_both_sides():
    assert choose_cores(range(16)).describe() == (
        "pinned: manager/driver on core 0; broker, workers, client on cores 1-15"
    )
    assert choose_cores({0, 1}).describe().endswith("broker, workers, client on core 1")


def test_pin_on_a_machine_of_one_core_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda _pid: {0})
    assert cli.main(["--pin", "--quick"]) == cli.EXIT_USAGE
    assert "--pin needs at least 2 usable cores" in capsys.readouterr().err


def test_the_readme_records_the_pinning():
    text = _results("2026-11-28, a CPU", True, [], "pinned: manager/driver on core 0; x")
    assert text.startswith(
        "Measured with `python -m bench --quick --pin` on 2026-11-28, a CPU. "
        "Pinned: manager/driver on core 0; x. Targets met: 0 of 0."
    )
    assert _results("w", False, [], None).startswith("Measured with `python -m bench` on w. ")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_pin_process_pins_every_thread_of_a_child():
    core = min(os.sched_getaffinity(0))
    code = "import threading, sys; threading.Thread(target=sys.stdin.read).start(); print(1)"
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "1\n"  # its thread runs
        pin_process(child.pid, {core})
        tids = os.listdir(f"/proc/{child.pid}/task")
        assert len(tids) == 2
        assert all(os.sched_getaffinity(int(tid)) == {core} for tid in tids)
    finally:
        child.communicate("")
