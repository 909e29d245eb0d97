"""Session-wide fixtures: the real RabbitMQ broker and unique names per test; and, under
pytest-xdist, the controller's side of the background fuzzer (tests/fuzz/background.py)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import background

ROOT = Path(__file__).resolve().parent.parent
AMQP_URL = os.environ.get("TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


def _broker_reachable(host: str = "127.0.0.1", port: int = 5672) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def amqp_url() -> str:
    """URL of the real RabbitMQ; skips locally without one, fails in CI (CI=true)."""
    if not _broker_reachable():
        message = "RabbitMQ is not running on 127.0.0.1:5672 (start it: rabbitmq-server -detached)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return AMQP_URL


@pytest.fixture
def unique() -> Iterator[str]:
    """A short unique token for this test's queue names, so tests never see each other's traffic."""
    yield "t" + uuid.uuid4().hex[:12]


# pytest-xdist's controller runs the background fuzzer, for whichever worker gets its test, and
# schedules the tests. These hooks are xdist's (optional: without xdist they are never called);
# this file is the one conftest the controller loads, as it collects nothing.


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each worker where the controller's fuzzer will run."""
    node.workerinput[background.WORKER_INPUT] = str(background.folder_for_workers(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Start the fuzzer once a worker has collected its test (before any test is handed out)."""
    background.start_for_workers(node.config, list(ids))


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own choice
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`: xdist's, with the groups of tests/xdist_groups.py."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.xdist_groups import GroupScheduling  # xdist is there: it calls this

    return GroupScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller's fuzzer, if any, ends with the run (a worker's is left to it)."""
    if not hasattr(config, "workerinput"):
        background.stop_for_workers(config)
