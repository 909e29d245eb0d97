"""In-flight requests: tracked so a worker can wait for them, cancel them, or run until idle."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from aio_pika.abc import AbstractQueue
from aio_pika.exceptions import AMQPError

__all__ = ["InFlight", "wait_until_idle"]

log = logging.getLogger(__name__)

# A request can be on the wire (sent by RabbitMQ, not yet counted as in flight) during one
# check, so idleness must be seen this many times in a row, `_POLL_S` apart.
_QUIET_CHECKS = 3
_POLL_S = 0.05


class InFlight:
    """The tasks handling requests right now, and how many requests have arrived in total."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.deliveries = 0

    def __len__(self) -> int:
        return len(self._tasks)

    @contextmanager
    def track(self, task: asyncio.Task[Any]) -> Iterator[None]:
        """Count `task` as in flight while the block runs."""
        self.deliveries += 1
        self._tasks.add(task)
        try:
            yield
        finally:
            self._tasks.discard(task)

    async def drain(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the tracked tasks, then cancel the rest and let them end."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self._tasks and (remaining := deadline - loop.time()) > 0:
            log.info("waiting for %d in-flight request(s)", len(self._tasks))
            await asyncio.wait(set(self._tasks), timeout=remaining)
        self.cancel()
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def cancel(self) -> None:
        """Cancel every tracked task; their requests stay unacked, so RabbitMQ redelivers them."""
        for task in self._tasks:
            if not task.done():
                log.warning("cancelling an in-flight request; RabbitMQ will redeliver it")
                task.cancel()


async def _ready_messages(queues: Sequence[AbstractQueue]) -> int | None:
    """Messages waiting in `queues` (re-declaring them reports the count); None if unknown."""
    total = 0
    for queue in queues:
        try:
            declared = await queue.declare()
        except (AMQPError, ConnectionError) as exc:
            log.debug("cannot count messages in %r yet: %s", queue.name, exc)
            return None
        total += declared.message_count or 0
    return total


async def wait_until_idle(
    *,
    queues: Callable[[], Sequence[AbstractQueue]],
    in_flight: Callable[[], int],
    deliveries: Callable[[], int],
    timeout_s: float | None,
) -> None:
    """Return once nothing is waiting or in flight for several checks in a row.

    Raises TimeoutError when that has not happened within `timeout_s` (None: wait forever).
    """
    quiet = 0
    last_deliveries = deliveries()
    try:
        async with asyncio.timeout(timeout_s):
            while quiet < _QUIET_CHECKS:
                waiting = await _ready_messages(queues()) if in_flight() == 0 else None
                idle = waiting == 0 and in_flight() == 0 and deliveries() == last_deliveries
                quiet = quiet + 1 if idle else 0
                last_deliveries = deliveries()
                await asyncio.sleep(_POLL_S)
    except TimeoutError:
        raise TimeoutError(
            f"worker not idle after {timeout_s}s ({in_flight()} request(s) in flight)"
        ) from None
