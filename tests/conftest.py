"""Session-wide fixtures: the real RabbitMQ broker and unique names per test."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

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
