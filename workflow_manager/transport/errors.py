"""aio-pika's and aiormq's failures as the manager's own errors, mapped in this one place."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from aiormq.exceptions import AMQPError, PublishError

from workflow_manager.errors import BrokerError, Unroutable

__all__ = ["AMQP_ERRORS", "as_broker_error", "broker_errors"]

AMQP_ERRORS = (AMQPError, OSError, ConnectionError, RuntimeError, asyncio.TimeoutError)
"""What the AMQP client raises when the broker or the connection fails."""


@contextlib.contextmanager
def broker_errors(what: str, *, returned: str | None = None) -> Iterator[None]:
    """Raise `BrokerError("<what>: <cause>")` for a broker failure in the block.

    A message the broker returned (mandatory, no queue took it) raises `Unroutable(returned)`.
    """
    try:
        yield
    except AMQP_ERRORS as exc:
        raise as_broker_error(exc, what, returned=returned) from exc


def as_broker_error(exc: BaseException, what: str, *, returned: str | None = None) -> BaseException:
    """`exc` as `broker_errors` raises it: a broker failure as `BrokerError("<what>: <cause>")`,
    a returned message as `Unroutable(returned)`; anything else as it is."""
    if isinstance(exc, PublishError):  # before AMQPError: it is one
        if returned is None:
            mapped: BaseException = BrokerError(f"{what}: RabbitMQ returned the message: {exc}")
        else:
            mapped = Unroutable(returned)
    elif isinstance(exc, AMQP_ERRORS):
        mapped = BrokerError(f"{what}: {exc}")
    else:
        return exc
    mapped.__cause__ = exc
    return mapped
