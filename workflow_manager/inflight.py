"""The work in hand: each delivery, timer and re-publish counted, so a stop can wait for them;
a journal failure stops the manager taking more."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from workflow_manager.errors import JournalError

__all__ = ["InFlight"]

log = logging.getLogger(__name__)


class InFlight:
    """Counts the handlers running now; `failed` is set once the journal cannot be written."""

    def __init__(self) -> None:
        self.failed = asyncio.Event()
        self.failure: BaseException | None = None
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def __repr__(self) -> str:
        return f"<InFlight {self._count} failed={self.failed.is_set()}>"

    def fail(self, exc: BaseException) -> None:
        """The journal cannot be written: stop taking work rather than lose events."""
        if self.failure is None:
            self.failure = exc
            log.critical("stopping: %s", exc)
        self.failed.set()

    def tracked(self, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Wrap a handler so a stop can wait for the work in hand; a journal failure stops us."""

        async def run(item: Any) -> None:
            if self.failed.is_set():
                return  # a message is left unacked: RabbitMQ gives it to the next manager
            self._count += 1
            self._idle.clear()
            try:
                await handler(item)
            except JournalError as exc:
                self.fail(exc)
            finally:
                self._count -= 1
                if self._count == 0:
                    self._idle.set()

        return run

    async def idle(self) -> None:
        """Return once no tracked handler runs."""
        await self._idle.wait()
