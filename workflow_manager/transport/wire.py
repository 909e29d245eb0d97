"""The frames of one AMQP 0-9-1 `basic.publish`, encoded directly. Pure.

pamqp encodes any frame by walking its fields' declared types, which makes the publish and
content-header frames of a step request cost more CPU than the rest of publishing it. A
manager's publishes all have the same shape (persistent JSON, a few string properties and a
headers table), so they are packed here with `struct` in one pass. So is a headers table of
strings and small integers (a step request's: workflow, attempt, traceparent, metadata); one
with any other value is pamqp's `field_table`, which took a twentieth of the manager's event
loop encoding them (bench/README.md). `tests/unit/transport/test_wire.py` checks the bytes are
pamqp's, byte for byte.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from pamqp import encode as pamqp_encode
from pamqp.encode import field_table

__all__ = ["publish_frames"]

_FRAME_END = b"\xce"
_METHOD, _HEADER, _BODY = 1, 2, 3
_FRAME = struct.Struct(">BHI")  # type, channel, payload size
_LONG = struct.Struct(">I")  # a table's size; a long string's length
_PUBLISH = struct.Struct(">HHH")  # class basic (60), method publish (40), reserved short
_HEADER_START = struct.Struct(">HHQH")  # class, weight, body size, property flags
_BASIC = 60
_PUBLISH_METHOD = 40
# Property flags of basic's content header, in the order their values follow.
_CONTENT_TYPE = 1 << 15
_HEADERS = 1 << 13
_DELIVERY_MODE = 1 << 12
_PRIORITY = 1 << 11
_CORRELATION_ID = 1 << 10
_REPLY_TO = 1 << 9
_MESSAGE_ID = 1 << 7


# Encoded once: a manager publishes to a few exchanges and routing keys (its queues, reply
# queues, `<workflow>.<event>`) and run events carry a one-entry headers table of a few kinds.
# Bounded: past the bound, a new one is encoded each time, as any other.
_CACHED = 4096
_methods: dict[tuple[str, str, bool], bytes] = {}
_tables: dict[tuple[str, Any], bytes] = {}
_shorts: dict[str, bytes] = {}
# A table value of an integer from -128 to 127, as pamqp types it (a short-short int).
_SMALL_INTS = {n: b"b" + n.to_bytes(1, "big", signed=True) for n in range(-128, 128)}
_MAX_FIELD_NAME = 128  # bytes: pamqp cuts a longer name (with a warning); its path does that


def _known(text: str) -> bytes:
    """`_short(text)` for a string many publishes repeat (a content type, a reply queue)."""
    data = _shorts.get(text)
    if data is None:
        data = _short(text)
        if len(_shorts) < _CACHED:
            _shorts[text] = data
    return data


def _method(exchange: str, routing_key: str, mandatory: bool) -> bytes:
    """A publish method frame's payload."""
    key = (exchange, routing_key, mandatory)
    method = _methods.get(key)
    if method is None:
        method = (
            _PUBLISH.pack(_BASIC, _PUBLISH_METHOD, 0)
            + _short(exchange)
            + _short(routing_key)
            + (b"\x01" if mandatory else b"\x00")
        )
        if len(_methods) < _CACHED:
            _methods[key] = method
    return method


def _table(headers: Mapping[str, Any]) -> bytes:
    """A headers table; one of a single string entry (a run event's) is encoded once."""
    if len(headers) == 1:
        ((name, value),) = headers.items()
        if isinstance(value, str):
            table = _tables.get((name, value))
            if table is None:
                table = field_table({name: value})
                if len(_tables) < _CACHED:
                    _tables[name, value] = table
            return table
    return _strings_and_small_ints(headers) or field_table(dict(headers))


def _strings_and_small_ints(headers: Mapping[str, Any]) -> bytes | None:
    """The table as pamqp encodes it (names in order), if its values are all strings and
    integers from -128 to 127; else None."""
    if pamqp_encode.DEPRECATED_RABBITMQ_SUPPORT:  # pamqp types integers otherwise then
        return None
    parts: list[bytes] = []
    for name in sorted(headers):
        key = _shorts.get(name)
        if key is None:
            if len(name.encode()) > _MAX_FIELD_NAME:
                return None
            key = _known(name)
        value = headers[name]
        if type(value) is str:  # exactly: a subclass, and bool among ints, are pamqp's to type
            data = value.encode()
            parts += (key, b"S", _LONG.pack(len(data)), data)
        elif type(value) is int and -128 <= value <= 127:
            parts += (key, _SMALL_INTS[value])
        else:
            return None
    table = b"".join(parts)
    return _LONG.pack(len(table)) + table


def _short(text: str) -> bytes:
    """An AMQP short string: a length octet and at most 255 bytes of UTF-8."""
    data = text.encode()
    if len(data) > 255:
        raise ValueError(
            f"AMQP short strings hold 255 bytes at most, not {len(data)}: {text[:60]!r}"
        )
    return bytes((len(data),)) + data


def publish_frames(
    channel: int,
    body: bytes,
    *,
    exchange: str,
    routing_key: str,
    mandatory: bool,
    frame_max_body: int,
    content_type: str | None = None,
    headers: Mapping[str, Any] | None = None,
    delivery_mode: int | None = None,
    priority: int | None = None,
    correlation_id: str | None = None,
    reply_to: str | None = None,
    message_id: str | None = None,
) -> bytes:
    """The method, content-header and body frames of one publish on `channel`.

    `frame_max_body`: the most body bytes one body frame may carry (the connection's frame
    size less a frame's 8 bytes of framing). Properties left None (or, for strings, empty) are
    not sent, as pamqp does.
    """
    method = _method(exchange, routing_key, mandatory)
    flags = 0
    properties = []
    if content_type:
        flags |= _CONTENT_TYPE
        properties.append(_known(content_type))
    if headers is not None:
        flags |= _HEADERS
        properties.append(_table(headers))
    if delivery_mode is not None:
        flags |= _DELIVERY_MODE
        properties.append(bytes((delivery_mode,)))
    if priority is not None:
        flags |= _PRIORITY
        properties.append(bytes((priority,)))
    if correlation_id:
        flags |= _CORRELATION_ID
        properties.append(_short(correlation_id))
    if reply_to:
        flags |= _REPLY_TO
        properties.append(_known(reply_to))
    if message_id:
        flags |= _MESSAGE_ID
        properties.append(_short(message_id))
    header = _HEADER_START.pack(_BASIC, 0, len(body), flags) + b"".join(properties)
    parts = [
        _FRAME.pack(_METHOD, channel, len(method)), method, _FRAME_END,
        _FRAME.pack(_HEADER, channel, len(header)), header, _FRAME_END,
    ]  # fmt: skip
    for start in range(0, len(body), frame_max_body):
        chunk = body[start : start + frame_max_body]
        parts += (_FRAME.pack(_BODY, channel, len(chunk)), chunk, _FRAME_END)
    return b"".join(parts)
