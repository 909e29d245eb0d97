"""Logging what the engine ignored without flooding the log: duplicates are normal.

At-least-once delivery means duplicate and late replies, and after a broker outage many of
them at once. The first one after a quiet spell is logged at INFO with its reason, the rest at
DEBUG, and one INFO line every `every_s` counts them; the journal keeps each with its reason.
"""

from __future__ import annotations

import asyncio
import logging

__all__ = ["IgnoredLog"]


class IgnoredLog:
    """Logs ignored messages: the first at INFO, then a count at most every `every_s`."""

    def __init__(self, logger: logging.Logger, every_s: float = 30.0) -> None:
        self._log = logger
        self._every_s = every_s
        self._more = 0
        self._timer: asyncio.TimerHandle | None = None

    def ignored(self, subject: str, reason: str) -> None:
        """One message the engine ignored, and why."""
        if self._timer is None:
            self._log.info("ignored %s: %s", subject, reason)
            self._timer = asyncio.get_running_loop().call_later(self._every_s, self._summary)
        else:
            self._more += 1
            self._log.debug("ignored %s: %s", subject, reason)

    def close(self) -> None:
        """Log the count not yet logged, and stop."""
        if self._timer is not None:
            self._timer.cancel()
            self._summary()

    def _summary(self) -> None:
        self._timer = None
        if self._more:
            self._log.info(
                "ignored %d more duplicate, late or stray messages in the last %gs "
                "(`--log-level debug` shows each; the journal keeps each with its reason)",
                self._more, self._every_s,
            )  # fmt: skip
            self._more = 0
