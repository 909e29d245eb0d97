"""A robust AMQP connection that reconnects promptly: on a `Backoff` schedule, and at once when
the broker's port answers again.

aio-pika's RobustConnection tries again every `reconnect_interval` (5 s by default), so a
client can stay away up to 5 s after the broker is back. `PromptRobustConnection` paces its
attempts by a `Backoff` and probes the broker's TCP port between them; it does so through one
private aio-pika method (`RobustConnection.__connect_transport`): if a release renames it,
aio-pika's own sleep paces the attempts, as before the probing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aio_pika.abc import ConnectionParameter as _Parameter
from aio_pika.robust_connection import RobustConnection

from amqp_outage.backoff import Backoff, Clock
from amqp_outage.errors import ReconnectSettingsError

if TYPE_CHECKING:
    from amqp_outage.tracker import Outage

__all__ = ["PROBE_EVERY_S", "PromptRobustConnection", "connect", "port_answers"]


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

    @property
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
            raise ReconnectSettingsError(
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
        ReconnectSettingsError: A backoff parameter or the URL's `reconnect_interval` is invalid.
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
