"""Quiet aio-pika's and aiormq's log lines about a lost connection: the `Outage` tracker's one
WARNING carries the cause instead. Any other error still shows."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable

from aiormq.exceptions import AuthenticationError, ChannelInvalidStateError

__all__ = ["NOISY_LOGGERS", "DisconnectNoiseFilter", "is_disconnect", "quiet_disconnect_noise"]

# The loggers aio-pika and aiormq write through (a logger's filters do not apply to its children).
NOISY_LOGGERS = (
    "aio_pika.channel",
    "aio_pika.connection",
    "aio_pika.exchange",
    "aio_pika.message",
    "aio_pika.queue",
    "aio_pika.robust_channel",
    "aio_pika.robust_connection",
    "aio_pika.robust_exchange",
    "aio_pika.robust_queue",
    "aio_pika.tools",
    "aiormq.channel",
    "aiormq.connection",
)

# Lines written for every reconnect attempt or at every loss, whatever the cause: the Outage's
# WARNING carries the cause once instead.
_PER_ATTEMPT_TEMPLATES = (
    "Connection to %s closed. Reconnecting",
    'Connection attempt to "%s" cancelled.',
    'Unexpected connection close from remote "%s"',
)


# OSError covers ConnectionError (refused, reset) and aiormq's connection errors;
# ChannelInvalidStateError is what a channel of a closed connection raises.
_DISCONNECT_ERRORS = (OSError, ChannelInvalidStateError, asyncio.CancelledError)
# aiormq's RuntimeError for a channel opened on a closed connection (a robust channel restoring
# itself on the dead transport): "<Connection: "amqp://..." at 0x7f...> closed".
_CONNECTION_CLOSED = re.compile(r"<\w*Connection\b.*> closed", re.DOTALL)


def is_disconnect(exc: BaseException | None) -> bool:
    """Whether `exc` is what a lost connection raises (refused, reset, closed, cancelled), as
    opposed to a bug or a refusal that retrying cannot fix (bad credentials)."""
    if exc is None or isinstance(exc, AuthenticationError):
        return False
    if isinstance(exc, RuntimeError) and _CONNECTION_CLOSED.fullmatch(str(exc)):
        return True
    return isinstance(exc, _DISCONNECT_ERRORS)


def _exceptions_of(record: logging.LogRecord) -> list[BaseException]:
    found: list[BaseException] = []
    if record.exc_info and record.exc_info[1] is not None:
        found.append(record.exc_info[1])
    args = record.args if isinstance(record.args, tuple) else ()
    found.extend(arg for arg in args if isinstance(arg, BaseException))
    return found


class DisconnectNoiseFilter(logging.Filter):
    """Drops aio-pika/aiormq records caused by a lost connection; lets everything else through.

    A record is dropped when every exception it carries (its exc_info, or an exception among
    its arguments, as in aio-pika's "Callback ... error: %s: %s") is a disconnect
    (`is_disconnect`), or when it carries none and is one of the per-attempt or per-loss lines
    (aio-pika's "Connection to ... closed. Reconnecting", aiormq's "Unexpected connection
    close"). A callback that fails with any other exception still shows.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """True to keep `record`."""
        exceptions = _exceptions_of(record)
        if exceptions:
            return not all(is_disconnect(exc) for exc in exceptions)
        template = str(record.msg)
        return not template.startswith(_PER_ATTEMPT_TEMPLATES)


def quiet_disconnect_noise(loggers: Iterable[str] = NOISY_LOGGERS) -> None:
    """Install one `DisconnectNoiseFilter` on each of `loggers` (a second call adds none)."""
    for name in loggers:
        logger = logging.getLogger(name)
        if not any(isinstance(f, DisconnectNoiseFilter) for f in logger.filters):
            logger.addFilter(DisconnectNoiseFilter())
