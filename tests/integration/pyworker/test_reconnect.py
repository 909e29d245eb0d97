"""When RabbitMQ drops the connection, the worker reconnects and its consumers resume."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from pyworker import Worker


def _close_connection(name: str) -> bool:
    """Force-close the broker connection called `name` with rabbitmqctl; False if not found."""
    listing = subprocess.run(
        ["rabbitmqctl", "-q", "--no-table-headers", "list_connections", "pid", "client_properties"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pids = [line.split("\t")[0] for line in listing.stdout.splitlines() if f'"{name}"' in line]
    for pid in pids:
        subprocess.run(
            ["rabbitmqctl", "-q", "close_connection", pid, "pyworker reconnect test"],
            capture_output=True,
            timeout=60,
            check=True,
        )
    return bool(pids)


@pytest.mark.skipif(shutil.which("rabbitmqctl") is None, reason="needs rabbitmqctl on this host")
async def test_consumers_resume_after_the_broker_closes_the_connection(amqp_url, caller, unique):
    name = f"pyworker reconnect {unique}"
    worker = Worker(f"{amqp_url}?reconnect_interval=0.5", name=name, environ={})
    queue = caller.queue("survivor")

    @worker.step(queue)
    async def echo(data):
        return data

    async with worker:
        await caller.request(queue, {"before": True})
        assert (await caller.reply()).body == {"before": True}
        assert worker.connected

        if not await asyncio.to_thread(_close_connection, name):
            pytest.skip("rabbitmqctl does not see this test's broker connection")
        await caller.request(queue, {"after": True})

        assert (await caller.reply(timeout_s=60)).body == {"after": True}
        assert worker.connected
