"""SIGINT and SIGTERM while a worker serves: the first asks for a graceful stop, a second one
aborts the requests still in flight."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

__all__ = ["stopping_on_signals"]

log = logging.getLogger("pyworker.worker")


@contextlib.contextmanager
def stopping_on_signals(stop: asyncio.Event, abort: Callable[[], None]) -> Iterator[None]:
    """While inside, SIGINT/SIGTERM set `stop`; once it is set, another one calls `abort`."""

    def received(signum: int) -> None:
        name = signal.Signals(signum).name
        if not stop.is_set():
            log.info("%s received: stopping after in-flight requests (again to abort)", name)
            stop.set()
        else:
            log.warning("%s received again: cancelling in-flight requests", name)
            abort()

    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        loop.add_signal_handler(signum, received, signum)
    try:
        yield
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
