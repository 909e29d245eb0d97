"""The outage tracker: whether a connection is up, and one log line per outage instead of one
per attempt."""

from __future__ import annotations

import asyncio
import logging
import time

from aio_pika.abc import AbstractConnection

from amqp_outage.backoff import Clock

__all__ = ["Outage"]

log = logging.getLogger(__name__)


class Outage:
    """Whether a connection is up, since when it is down, and what was held back meanwhile.

    Logs exactly one WARNING when an outage starts (with its cause), one INFO when it ends
    (its length and the `held()` counts) and, while it lasts, at most one reminder every
    `remind_every_s` (from a single timer, when an event loop runs). Create it once connected.

    Args:
        label: What is connected, at the start of each line (e.g. "RabbitMQ connection").
        logger: Where the lines go (default: this module's logger).
        remind_every_s: Interval of the "still down" reminders.
        clock: Monotonic seconds; injectable for tests.
    """

    def __init__(
        self,
        label: str = "RabbitMQ connection",
        *,
        logger: logging.Logger | None = None,
        remind_every_s: float = 30.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self.label = label
        self._log = logger or log
        self._remind_every_s = remind_every_s
        self._clock = clock
        self._lost_at: float | None = None
        self._last_line_at = 0.0
        self._cause = ""
        self._held: dict[str, int] = {}
        self._connected = asyncio.Event()
        self._connected.set()
        self._timer: asyncio.TimerHandle | None = None
        self._closing = False
        self.outages = 0

    def __repr__(self) -> str:
        state = "connected" if self.connected else f"down {self.down_for_s:.1f}s"
        return f"<Outage {self.label!r} {state} outages={self.outages}>"

    @property
    def connected(self) -> bool:
        """False from the loss of the connection until it is restored."""
        return self._lost_at is None

    @property
    def down_for_s(self) -> float | None:
        """Seconds since the connection was lost; None while connected."""
        return None if self._lost_at is None else self._clock() - self._lost_at

    @property
    def held_counts(self) -> dict[str, int]:
        """What was held back since the last outage ended, by kind (a copy)."""
        return dict(self._held)

    def lost(self, cause: BaseException | str | None = None) -> bool:
        """The connection is lost: logs the WARNING if this starts an outage (returns whether).

        Ignored after `close()` (a deliberate shutdown is no outage).
        """
        if self._closing or self._lost_at is not None:
            return False
        self._lost_at = self._last_line_at = self._clock()
        self._cause = _describe(cause)
        self._connected.clear()
        self.outages += 1
        self._log.warning("%s lost (%s); reconnecting", self.label, self._cause)
        self._schedule_reminder()
        return True

    def restored(self) -> bool:
        """The connection (and what depends on it) is back: logs the INFO line; returns whether
        an outage ended."""
        if self._lost_at is None:
            return False
        down_s = self._clock() - self._lost_at
        self._lost_at = None
        self._cancel_reminder()
        self._log.info("%s restored after %.1fs; %s", self.label, down_s, self._held_text())
        self._held.clear()
        self._connected.set()
        return True

    def held(self, kind: str, count: int = 1) -> None:
        """Count something held back (or failed) because of the outage, e.g. "replies not sent".

        Counted silently; reported in the reminders and in the line that ends the outage. A
        count taken just before the loss is noticed goes into the outage that follows.
        """
        self._held[kind] = self._held.get(kind, 0) + count

    async def wait_connected(self, timeout_s: float | None = None) -> None:
        """Return once connected (at once if connected); TimeoutError after `timeout_s`."""
        async with asyncio.timeout(timeout_s):
            await self._connected.wait()

    def remind(self) -> bool:
        """Log the "still down" line if one is due (the timer calls this); returns whether."""
        if self._lost_at is None:
            return False
        now = self._clock()
        if now - self._last_line_at < self._remind_every_s:
            return False
        self._last_line_at = now
        self._log.warning(
            "%s still down after %.0fs (%s); %s",
            self.label,
            now - self._lost_at,
            self._cause,
            self._held_text(),
        )
        return True

    def watch(self, connection: AbstractConnection) -> None:
        """Follow a robust connection: its close callbacks start an outage (unless the close was
        asked for), its reconnect callbacks (channels, queues, consumers restored) end it."""

        def on_close(sender: object, exc: BaseException | None = None) -> None:
            if not connection.close_called:
                self.lost(exc)

        connection.close_callbacks.add(on_close)
        reconnect_callbacks = getattr(connection, "reconnect_callbacks", None)
        if reconnect_callbacks is not None:
            reconnect_callbacks.add(lambda _sender: self.restored())

    def close(self) -> None:
        """The connection is being closed on purpose: stop the reminders, log no outage."""
        self._closing = True
        self._cancel_reminder()

    def _held_text(self) -> str:
        if not self._held:
            return "nothing held back"
        counts = ", ".join(f"{count} {kind}" for kind, count in self._held.items())
        return f"held back: {counts}"

    def _schedule_reminder(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (a unit test): remind() is then called by hand
        # A hair late rather than early: remind() measures with its own clock.
        self._timer = loop.call_later(self._remind_every_s + 0.05, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._lost_at is not None and not self._closing:
            self.remind()
            self._schedule_reminder()

    def _cancel_reminder(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _describe(cause: BaseException | str | None, limit: int = 300) -> str:
    """A one-line cause: the exception's type and message (never a traceback)."""
    if cause is None:
        text = "no cause given"
    elif isinstance(cause, BaseException):
        message = str(cause).strip()
        text = f"{type(cause).__name__}: {message}" if message else type(cause).__name__
    else:
        text = cause
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
