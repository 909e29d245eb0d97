"""Drain mode: wait until a worker's queues are empty and nothing is in flight."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from aio_pika.abc import AbstractQueue
from aio_pika.exceptions import AMQPError

__all__ = ["wait_until_idle"]

log = logging.getLogger(__name__)

# A request can be on the wire (sent by RabbitMQ, not yet counted as in flight) during one
# check, so idleness must be seen this many times in a row, `_POLL_S` apart.
_QUIET_CHECKS = 3
_POLL_S = 0.05


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
