"""The slow fuzz test runs last, and its fuzzer starts in the background once collection is
done (tests/fuzz/background.py): it fuzzes while the rest of the suite runs. Under pytest-xdist
the controller starts it (tests/conftest.py) and the worker given the test waits for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.background import FUZZER, TEST, WORKER_INPUT, BackgroundFuzzer, atheris_installed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the fuzz test to the end and start its fuzzer now (or, in an xdist worker, find
    the controller's), if it is to run."""
    fuzz = [item for item in items if item.name == TEST]
    if not fuzz:
        return
    items[:] = [item for item in items if item.name != TEST] + fuzz
    if not atheris_installed():
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        config.stash[FUZZER] = BackgroundFuzzer.start()
    elif WORKER_INPUT in workerinput:
        config.stash[FUZZER] = BackgroundFuzzer.attach(Path(workerinput[WORKER_INPUT]))


def pytest_unconfigure(config: pytest.Config) -> None:
    """End the fuzzer if the run stopped before its test (and remove its files); a worker's
    is the controller's to end."""
    fuzzer = config.stash.get(FUZZER, None)
    if fuzzer is not None:
        fuzzer.stop()
