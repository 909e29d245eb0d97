"""The reconnect schedule: how long a client waits before its next attempt during an outage."""

from __future__ import annotations

import time
from collections.abc import Callable

from amqp_outage.errors import ReconnectSettingsError

__all__ = ["Backoff", "Clock"]

Clock = Callable[[], float]
"""Monotonic seconds; injectable for tests."""


class Backoff:
    """The wait before the next reconnect attempt: a share of the outage so far, clamped.

    The wait is `fraction` x (time since the connection was lost), at least `first_s` and at
    most `max_s`. With the defaults attempts come at about 0, 0.5, 1, 1.5, 2, 2.5, 3.1, 3.9,
    4.9, 6.1, 7.6 ... s, then every 5 s: a reconnect lands at most ~25 % of the outage's length
    (and never more than 5 s) after the broker is back. `fraction=1` doubles each wait.
    """

    def __init__(
        self,
        first_s: float = 0.5,
        max_s: float = 5.0,
        fraction: float = 0.25,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        if not first_s > 0 or not fraction > 0:
            raise ReconnectSettingsError(
                f"reconnect backoff: first_s ({first_s!r}) and fraction ({fraction!r}) must be > 0"
            )
        self.first_s = float(first_s)
        self.max_s = max(float(max_s), self.first_s)
        self.fraction = float(fraction)
        self._clock = clock
        self._lost_at: float | None = None

    def __repr__(self) -> str:
        state = "connected" if self._lost_at is None else f"down {self.down_for_s():.1f}s"
        return f"<Backoff {self.first_s}s..{self.max_s}s x{self.fraction} {state}>"

    def lost(self) -> None:
        """The connection is lost: the schedule runs from now (a second call changes nothing)."""
        if self._lost_at is None:
            self._lost_at = self._clock()

    def restored(self) -> None:
        """The connection is back: the next outage starts prompt again."""
        self._lost_at = None

    def down_for_s(self) -> float:
        """Seconds since the connection was lost (0 when connected)."""
        return 0.0 if self._lost_at is None else self._clock() - self._lost_at

    @property
    def interval_s(self) -> float:
        """Seconds to wait before the next attempt, computed now."""
        return min(self.max_s, max(self.first_s, self.down_for_s() * self.fraction))
