"""How a robust AMQP connection behaves across an outage: prompt reconnects, one line per outage.

Used by pyworker's Worker and by the manager's broker adapter (this module imports nothing
of either):

- `connect()` opens a `PromptRobustConnection`: aio-pika's RobustConnection whose reconnect
  attempts follow a `Backoff` (0.5 s at first, growing with the outage, at most 5 s) instead of
  a fixed 5 s; while it waits between attempts it tries the broker's TCP port every 0.1 s and
  attempts at once when the port accepts (a broker still starting that refuses the handshake
  is then tried again on a schedule that starts anew). A client consumes again soon after the
  broker is back, however long it was down.
- `Outage` knows whether the connection is up and since when it is down, counts what was held
  back meanwhile, and logs one WARNING when an outage starts, one INFO when it ends and at most
  one reminder every 30 s in between. Publishers await `wait_connected()`.
- `quiet_disconnect_noise()` installs `DisconnectNoiseFilter` on aio-pika's and aiormq's
  loggers: their per-attempt lines and the callback errors a disconnect causes are dropped;
  any other error still shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from aio_pika.abc import AbstractConnection
from aio_pika.abc import ConnectionParameter as _Parameter
from aio_pika.robust_connection import RobustConnection
from aiormq.exceptions import AuthenticationError, ChannelInvalidStateError

from pyworker.errors import SettingsError

__all__ = [
    "Backoff",
    "PROBE_EVERY_S",
    "PromptRobustConnection",
    "port_answers",
    "connect",
    "Outage",
    "DisconnectNoiseFilter",
    "quiet_disconnect_noise",
    "is_disconnect",
    "NOISY_LOGGERS",
]

log = logging.getLogger(__name__)

Clock = Callable[[], float]


# -- reconnect schedule ---------------------------------------------------------------------


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
            raise SettingsError(
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


def _with_default(
    parameters: tuple[_Parameter, ...], name: str, default: str
) -> tuple[_Parameter, ...]:
    return tuple(replace(p, default=default) if p.name == name else p for p in parameters)


# How often the broker's port is tried while a reconnect attempt waits for its turn.
PROBE_EVERY_S = 0.1
_AMQP_PORTS = {"amqp": 5672, "amqps": 5671}


async def port_answers(host: str, port: int, timeout_s: float) -> bool:
    """Whether a TCP connection to `host`:`port` is accepted within `timeout_s` (then closed).

    Cheaper than an AMQP attempt: no handshake, nothing logged by the broker but a connection.
    """
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


# aio-pika's one reconnect attempt (RobustConnection.__connect_transport, name-mangled): the
# hook where an attempt waits for its turn. None if a release renamed it: then aio-pika's own
# sleep of `reconnect_interval` paces the attempts, as before the probing.
_ATTEMPT = getattr(RobustConnection, "_RobustConnection__connect_transport", None)


class PromptRobustConnection(RobustConnection):
    """A RobustConnection that reconnects on a `Backoff` schedule rather than every 5 s, and at
    once when the broker's port starts answering.

    aio-pika sleeps `reconnect_interval` after a failed attempt; here that is one probe's tick,
    and the next attempt waits its turn (`_await_turn`): the backoff's interval after the last
    attempt, or until the broker's port accepts a connection. Once it does, the waits start
    again from the backoff's first one (0.5 s), for a broker that accepts connections before it
    completes handshakes. Setting `reconnect_interval` (aio-pika does, from the URL's
    `?reconnect_interval=`, default 0.5 here) sets the backoff's first wait.
    """

    PARAMETERS = _with_default(RobustConnection.PARAMETERS, "reconnect_interval", "0.5")

    def __init__(
        self,
        url: Any,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        max_interval_s: float = 5.0,
        fraction: float = 0.25,
        clock: Clock = time.monotonic,
        probe_every_s: float = PROBE_EVERY_S,
        **kwargs: Any,
    ) -> None:
        # Before super().__init__(): it assigns reconnect_interval, which the property stores here.
        self.backoff = Backoff(max_s=max_interval_s, fraction=fraction, clock=clock)
        self.probe_every_s = probe_every_s
        self._clock = clock
        self._attempted_at: float | None = None  # the last attempt of this outage
        self._opened_at: float | None = None  # since when the port answers again
        super().__init__(url, loop, **kwargs)
        self.close_callbacks.add(self._on_lost)
        self.reconnect_callbacks.add(self._on_restored)

    @property  # type: ignore[override]
    def reconnect_interval(self) -> float:
        """Seconds aio-pika sleeps before its next try: a probe's tick when that try is an
        attempt that waits its turn (`_await_turn`), else the backoff's interval."""
        if _ATTEMPT is not None and self._transport_down():
            return min(self.probe_every_s, self.backoff.interval_s)
        return self.backoff.interval_s

    @reconnect_interval.setter
    def reconnect_interval(self, first_s: float) -> None:
        try:
            first = float(first_s)
        except (TypeError, ValueError):
            first = -1.0
        if not first > 0:
            raise SettingsError(
                f"reconnect_interval must be a number of seconds > 0, not {first_s!r}"
            )
        self.backoff.first_s = first
        self.backoff.max_s = max(self.backoff.max_s, first)

    def _transport_down(self) -> bool:
        transport = self.transport
        return transport is None or transport.connection.is_closed

    def _address(self) -> tuple[str, int]:
        url = self.url
        return url.host or "localhost", url.port or _AMQP_PORTS.get(url.scheme, 5672)

    def _left_s(self, attempted_at: float) -> float:
        """Seconds until the next attempt is due: the backoff's wait after the last attempt,
        or, once the port answers again, a wait growing from that moment instead."""
        backoff = self.backoff
        wait_s = backoff.interval_s
        if self._opened_at is not None:
            # A broker still starting may refuse the first handshakes: try again soon.
            since_s = self._clock() - self._opened_at
            wait_s = min(wait_s, max(backoff.first_s, since_s * backoff.fraction))
        return attempted_at + wait_s - self._clock()

    async def _await_turn(self) -> None:
        """Before a reconnect attempt: wait its turn (`_left_s`), trying the broker's port every
        `probe_every_s` meanwhile; go at once when the port accepts again. The first attempt
        of an outage goes at once."""
        attempted_at = self._attempted_at
        if attempted_at is None:
            return
        host, port = self._address()
        while (left_s := self._left_s(attempted_at)) > 0:
            tick_s = min(self.probe_every_s, left_s)
            if not await port_answers(host, port, tick_s):
                self._opened_at = None
            elif self._opened_at is None:
                self._opened_at = self._clock()
                return
            await asyncio.sleep(max(0.0, min(tick_s, self._left_s(attempted_at))))

    async def _attempt(self) -> None:
        """One reconnect attempt of aio-pika's loop, in its turn."""
        await self._await_turn()
        self._attempted_at = self._clock()
        await _ATTEMPT(self)  # type: ignore[misc]

    if _ATTEMPT is not None:
        _RobustConnection__connect_transport = _attempt

    def _on_lost(self, _sender: object, _exc: BaseException | None = None) -> None:
        self.backoff.lost()

    def _on_restored(self, _sender: object) -> None:
        self.backoff.restored()
        self._attempted_at = self._opened_at = None


async def connect(
    url: str,
    *,
    name: str,
    outage: Outage | None = None,
    max_interval_s: float = 5.0,
    fraction: float = 0.25,
    timeout_s: float | None = None,
) -> PromptRobustConnection:
    """Open a robust connection that reconnects promptly, named `name` in RabbitMQ's listings.

    Args:
        url: The broker URL (aio-pika query parameters such as `?heartbeat=` apply).
        name: The client-provided connection name, shown by `rabbitmqctl list_connections`.
        outage: A tracker to keep informed of losses and reconnects (see `Outage.watch`).
        max_interval_s: The longest wait between reconnect attempts.
        fraction: Share of the outage so far waited before the next attempt (see `Backoff`).
        timeout_s: Give up the first connection attempt after this long.

    Raises:
        aio_pika.exceptions.AMQPError, OSError: The first attempt failed (no retries then);
            adapters translate these into their own errors.
        SettingsError: A backoff parameter is invalid.
    """
    connection = PromptRobustConnection(
        url,
        max_interval_s=max_interval_s,
        fraction=fraction,
        client_properties={"connection_name": name},
    )
    if outage is not None:
        outage.watch(connection)
    try:
        await connection.connect(timeout=timeout_s)
    except BaseException:
        with contextlib.suppress(Exception):
            await connection.close()  # no reconnect loop left behind a failed first attempt
        raise
    return connection


# -- the outage tracker ---------------------------------------------------------------------


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


# -- log noise --------------------------------------------------------------------------------

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
