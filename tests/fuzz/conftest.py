"""The slow fuzz test runs last, and its fuzzer starts in the background once collection is
done (tests/fuzz/background.py): it fuzzes while the rest of the suite runs."""

from __future__ import annotations

import pytest

from tests.fuzz.background import FUZZER, BackgroundFuzzer

_TEST = "test_the_fuzzer_finds_no_crasher"


def _atheris_installed() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the fuzz test to the end and start its fuzzer now, if it is to run."""
    fuzz = [item for item in items if item.name == _TEST]
    if not fuzz:
        return
    items[:] = [item for item in items if item.name != _TEST] + fuzz
    if _atheris_installed():
        config.stash[FUZZER] = BackgroundFuzzer.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    """End the fuzzer if the run stopped before its test (and remove its files)."""
    fuzzer = config.stash.get(FUZZER, None)
    if fuzzer is not None:
        fuzzer.stop()
