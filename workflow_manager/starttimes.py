"""When a delayed job starts: `delay` seconds from now, or a `not_before` time. Pure.

Read at the edges (a trigger's `x-delay` / `x-not-before` headers, the HTTP `?delay=` /
`?not_before=` parameters); `name_delay` and `name_not_before` are how the caller calls them,
so a bad value is refused naming the header or the parameter the sender wrote.
"""

from __future__ import annotations

import math
from datetime import datetime

__all__ = ["StartTimeError", "start_time", "MAX_DELAY_S", "MAX_UNIX_S"]

MAX_DELAY_S = 10 * 366 * 86_400.0  # ten years: further is a unit mistake (ms for s)
MAX_UNIX_S = 253_402_300_799.0  # 9999-12-31T23:59:59Z, the last time RFC 3339 can write


def _shown(text: str) -> str:
    """`text` quoted for an error message, cut: a sender may write a header of any length."""
    return repr(text if len(text) <= 60 else text[:60] + "...")


class StartTimeError(ValueError):
    """A delay or start time that cannot be read; the message names the header or parameter."""


def _seconds(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise StartTimeError(f"{name} must be a number of seconds, got {_shown(text)}") from None
    if not math.isfinite(value) or value < 0:
        raise StartTimeError(f"{name} must be a finite number of seconds >= 0, got {_shown(text)}")
    if value > MAX_DELAY_S:
        raise StartTimeError(f"{name} is {text} seconds: more than ten years; are those ms?")
    return value


def _time(text: str, name: str, now: float) -> float:
    number = _is_number(text)
    try:
        value = float(text) if number else _rfc3339(text)
    except (ValueError, OverflowError):
        raise StartTimeError(
            f"{name} must be an RFC 3339 time (e.g. 2026-05-01T09:00:00Z) or Unix seconds, "
            f"got {_shown(text)}"
        ) from None
    if value > MAX_UNIX_S:
        raise StartTimeError(f"{name} {_shown(text)} is after the year 9999; are those ms?")
    if value > now + MAX_DELAY_S:
        # The same bound as a delay's: a job waits ten years at most, however it asks.
        hint = "; are those ms?" if number else ""
        raise StartTimeError(f"{name} {_shown(text)} is more than ten years from now{hint}")
    return value


def _is_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value)


def _rfc3339(text: str) -> float:
    moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    if moment.tzinfo is None:
        raise ValueError("no time zone")  # a local time would depend on the manager's zone
    return moment.timestamp()


def start_time(
    delay: str | None,
    not_before: str | None,
    now: float,
    name_delay: str = "delay",
    name_not_before: str = "not_before",
) -> float | None:
    """The unix time a job asked to start at, or None when it asked for neither.

    Both given: the later of the two. Raises StartTimeError (naming `name_delay` or
    `name_not_before`) for a value that cannot be read, or one more than ten years
    (MAX_DELAY_S) from `now`.
    """
    times = []
    if delay is not None:
        times.append(now + _seconds(delay.strip(), name_delay))
    if not_before is not None:
        times.append(_time(not_before.strip(), name_not_before, now))
    return max(times) if times else None
