"""Compact JSON for message bodies and journal rows: orjson when it agrees with the stdlib.

orjson is several times faster than `json`, and the manager encodes or parses JSON for every
message it sends, receives and journals. Where the two differ, the stdlib's answer is kept:
integers wider than 64 bits (orjson refuses to write them and reads them as floats) and dicts
with non-string keys go through `json`, so no value changes on the way through.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "UNDECIDED",
    "deeper_than",
    "may_nest_past",
    "dumps",
    "dumps_text",
    "loads",
    "fast_loads",
    "json_type",
]

MAX_DEPTH = 250
"""The most levels of nesting any JSON value may have (`--max-json-depth` is at most this):
orjson writes up to 254, and the job rows that hold a value add a few of their own."""

# 20 digits in a row may be an integer beyond 64 bits, which orjson would read as a float.
_LONG_DIGITS = re.compile(rb"\d{20}")


def dumps(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON (TypeError or ValueError if it is not serialisable)."""
    # orjson hands back its 4 KB working buffer as the bytes object: a fan-out keeping 100,000
    # request bodies would hold 4 KB each. Going through str makes a copy of the right size.
    return dumps_text(value).encode()


def dumps_text(value: Any) -> str:
    """`value` as compact JSON text, for TEXT columns."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        # orjson's own refusals (big integers, non-string keys) or a genuinely bad value: the
        # stdlib writes the first two and raises its usual error for the last.
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


UNDECIDED: Any = object()
"""What `fast_loads` returns when only the stdlib can say what the text holds."""


def fast_loads(raw: bytes | str) -> Any:
    """Parse strict JSON (no NaN, UTF-8, no lone surrogates) with orjson, or return UNDECIDED.

    UNDECIDED means orjson refused the text or might read it differently from the stdlib;
    the caller then parses it with `json`, which also gives the error message.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if _LONG_DIGITS.search(raw) is not None:
        return UNDECIDED
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return UNDECIDED


def loads(data: bytes | str) -> Any:
    """Parse JSON text the way `json.loads` would; raises ValueError when it is not JSON."""
    value = fast_loads(data)
    return json.loads(data) if value is UNDECIDED else value


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}


def json_type(value: Any) -> str:
    """How a JSON reader would name `value`'s type: an object, a list, null, a number..."""
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def may_nest_past(raw: bytes, limit: int) -> bool:
    """False when the JSON text `raw` cannot nest deeper than `limit`: it has no more `[` and
    `{` than that (those in strings count too). Two C-speed scans: most messages stop here."""
    return raw.count(b"[") + raw.count(b"{") > limit


def deeper_than(raw: bytes, value: Any, limit: int) -> bool:
    """True when `value` (parsed from `raw`) nests objects and lists more than `limit` deep."""
    if not may_nest_past(raw, limit) or not isinstance(value, dict | list):
        return False
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth >= limit:
                    return True
                level.append((child, depth + 1))
    return False
