"""A reconnect attempt waits its turn, but not once the broker's port answers: a real TCP
listener on loopback stands for the broker coming back (amqp_outage.PromptRobustConnection).
"""

from __future__ import annotations

import asyncio
import socket
import time

from amqp_outage import PromptRobustConnection, port_answers

# A wait far longer than the test: only the port answering can end it early.
LONG_WAIT_S = 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _waiting(port: int) -> PromptRobustConnection:
    """A connection in a long outage whose next attempt is LONG_WAIT_S away."""
    url = f"amqp://guest:guest@127.0.0.1:{port}/"
    connection = PromptRobustConnection(url, max_interval_s=LONG_WAIT_S)
    connection.backoff._lost_at = time.monotonic() - 1000  # down long: the longest wait
    connection._attempted_at = time.monotonic()
    return connection


async def _listen(port: int) -> asyncio.Server:
    return await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", port)


async def test_the_probe_tells_an_open_port_from_a_closed_one():
    port = _free_port()
    assert not await port_answers("127.0.0.1", port, 1.0)
    async with await _listen(port):
        assert await port_answers("127.0.0.1", port, 1.0)


async def test_an_attempt_goes_as_soon_as_the_port_answers_again():
    port = _free_port()
    connection = _waiting(port)
    turn = asyncio.create_task(connection._await_turn())
    # The port is refused for a while (the broker is down)...
    assert not await port_answers("127.0.0.1", port, 1.0)
    await asyncio.wait({turn}, timeout=0.5)
    assert not turn.done()
    # ...then accepts: the attempt is due within a few probes, not after LONG_WAIT_S.
    async with await _listen(port):
        opened = time.monotonic()
        await asyncio.wait_for(turn, 2.0)
    assert time.monotonic() - opened < 1.0


async def test_after_the_port_answered_the_next_attempt_waits_the_first_interval_again():
    port = _free_port()
    connection = _waiting(port)
    async with await _listen(port):
        await asyncio.wait_for(connection._await_turn(), 2.0)  # answered: at once
        connection._attempted_at = started = time.monotonic()  # that attempt failed
        await asyncio.wait_for(connection._await_turn(), LONG_WAIT_S / 2)
    # A broker that accepts connections but not yet handshakes: tried again after the first
    # wait (0.5 s), counted from when its port answered, not after the outage's long wait.
    assert 0.4 < time.monotonic() - started < 3.0
