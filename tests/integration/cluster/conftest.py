"""The `cluster` fixture: a fresh PostgreSQL database and a ClusterRig on it (P=4 unless a
test's `partitions` fixture says otherwise)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aio_pika
import pytest

from tests.pgdatabase import fresh_database

from .rig import ClusterRig


@pytest.fixture
def partitions() -> int:
    return 4


@pytest.fixture
async def cluster(
    amqp_url: str, unique: str, tmp_path: Path, partitions: int
) -> AsyncIterator[ClusterRig]:
    with fresh_database() as db:
        connection = await aio_pika.connect_robust(amqp_url)
        channel = await connection.channel()
        rig = ClusterRig(
            unique, amqp_url, db, tmp_path / "workflows.yaml", connection, channel, partitions
        )
        try:
            yield rig
        finally:
            await rig.cleanup()
            await connection.close()
