"""The frames of one AMQP 0-9-1 `basic.publish`, encoded directly. Pure.

pamqp encodes any frame by walking its fields' declared types, which makes the publish and
content-header frames of a step request cost more CPU than the rest of publishing it. A
manager's publishes all have the same shape (persistent JSON, a few string properties and a
headers table), so they are packed here with `struct` in one pass; the headers table, whose
values can be of any AMQP type, is still pamqp's `field_table`.
`tests/unit/transport/test_wire.py` checks the bytes are pamqp's, byte for byte.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from pamqp.encode import field_table

__all__ = ["publish_frames"]

_FRAME_END = b"\xce"
_METHOD, _HEADER, _BODY = 1, 2, 3
_FRAME = struct.Struct(">BHI")  # type, channel, payload size
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
    method = (
        _PUBLISH.pack(_BASIC, _PUBLISH_METHOD, 0)
        + _short(exchange)
        + _short(routing_key)
        + (b"\x01" if mandatory else b"\x00")
    )
    flags = 0
    properties = []
    if content_type:
        flags |= _CONTENT_TYPE
        properties.append(_short(content_type))
    if headers is not None:
        flags |= _HEADERS
        properties.append(field_table(dict(headers)))
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
        properties.append(_short(reply_to))
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
