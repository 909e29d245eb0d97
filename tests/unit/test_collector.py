"""The garbage collector set for a manager, and recovery's objects frozen (`collector`)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from workflow_manager import collector


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each collection that starts on the test's thread while it runs.

    Other threads of the test process (an earlier test's, pytest-xdist's) are left out: one may
    call `gc.collect` itself, and once the collector is back on, one that allocates may start a
    collection at any moment.
    """
    seen: list[int] = []
    test_thread = threading.get_ident()

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and threading.get_ident() == test_thread:
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
        gc.unfreeze()  # the test's objects back to the collector, as before it


def test_no_collection_runs_while_recovery_builds_and_what_it_built_is_frozen(
    collections: list[int],
) -> None:
    frozen = gc.get_freeze_count()
    with collector.long_lived():
        assert not gc.isenabled()
        built = [[n] for n in range(200_000)]  # far past any young threshold
        during = list(collections)  # those after the block may run: the collector is back on
    assert during == [] and gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(built)


def test_the_collector_stays_off_after_the_block_when_it_was_off_before() -> None:
    gc.disable()
    try:
        with collector.long_lived():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_failure_inside_the_block_still_turns_the_collector_back_on() -> None:
    with pytest.raises(RuntimeError), collector.long_lived():
        raise RuntimeError("recovery failed")
    assert gc.isenabled()
    gc.unfreeze()


def test_the_thresholds_are_the_managers() -> None:
    before = gc.get_threshold()
    try:
        collector.tune()
        assert gc.get_threshold() == collector.THRESHOLDS
    finally:
        gc.set_threshold(*before)
