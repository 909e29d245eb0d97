"""aio-pika's and aiormq's failures as the manager's own errors, mapped in this one place."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from aiormq.exceptions import AMQPError, PublishError

from workflow_manager.errors import BrokerError, Unroutable

__all__ = ["AMQP_ERRORS", "broker_errors"]

AMQP_ERRORS = (AMQPError, OSError, ConnectionError, RuntimeError, asyncio.TimeoutError)
"""What the AMQP client raises when the broker or the connection fails."""


@contextlib.contextmanager
def broker_errors(what: str, *, returned: str | None = None) -> Iterator[None]:
    """Raise `BrokerError("<what>: <cause>")` for a broker failure in the block.

    A message the broker returned (mandatory, no queue took it) raises `Unroutable(returned)`.
    """
    try:
        yield
    except PublishError as exc:  # before AMQPError: it is one
        if returned is None:
            raise BrokerError(f"{what}: RabbitMQ returned the message: {exc}") from exc
        raise Unroutable(returned) from exc
    except AMQP_ERRORS as exc:
        raise BrokerError(f"{what}: {exc}") from exc
