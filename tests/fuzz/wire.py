"""Fuzz bytes as the parts of an AMQP delivery, and back (for the seed inputs). Pure.

The fuzzer mutates raw bytes; `Reader` reads them as a structure (choices, numbers,
length-prefixed texts, header values as aio-pika/pamqp hand them over), so a mutation changes
one part of a message rather than making it unreadable. Past the end of the input every read
is empty or zero: any byte string is a valid input. `Writer` writes the same format, so the
seed inputs (`tests.fuzz.seeds`) are plain messages.
"""

from __future__ import annotations

import datetime
import decimal
import json
import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = [
    "HEADER_NAMES",
    "MAX_HEADER_NESTING",
    "Reader",
    "Writer",
    "read_headers",
    "json_text",
]

T = TypeVar("T")

# The headers the manager reads; any other name is read as text.
HEADER_NAMES = (
    "workflow",
    "x-delay",
    "x-not-before",
    "x-priority",
    "x-meta",
    "x-meta-patch",
    "x-error",
    "x-attempt",
    "traceparent",
)
# pamqp decodes a field table recursively: from a shallow stack it reads ~490 levels of
# tables and arrays, and a message nested deeper fails in the client, before the manager.
MAX_HEADER_NESTING = 450
_MAX_CONTAINER = 4  # items in a generated dict or list (the fuzzer nests them for more)
_MAX_LEVEL = 5  # levels of generated containers, before a "deep" wrapper


class Reader:
    """Reads fuzz bytes front to back; past the end, bytes are 0 and blobs empty."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def byte(self) -> int:
        """The next byte (0 past the end)."""
        if self._pos >= len(self._data):
            return 0
        self._pos += 1
        return self._data[self._pos - 1]

    def number(self, size: int) -> int:
        """An unsigned big-endian number of `size` bytes."""
        value = 0
        for _ in range(size):
            value = value << 8 | self.byte()
        return value

    def pick(self, options: Sequence[T]) -> T:
        """One of `options`, chosen by the next byte."""
        return options[self.byte() % len(options)]

    def blob(self) -> bytes:
        """Bytes with a two-byte length before them (cut short at the end of the input)."""
        size = self.number(2)
        start = min(self._pos, len(self._data))
        self._pos = start + size
        return self._data[start : start + size]

    def text(self) -> str:
        """A blob as text: what strict UTF-8 decoding (pamqp's) can give, NUL included."""
        return self.blob().decode("utf-8", errors="replace")

    def float64(self) -> float:
        """Eight bytes as an IEEE double (NaN and infinities included)."""
        return struct.unpack(">d", self.number(8).to_bytes(8, "big"))[0]

    def json_value(self, level: int = 0) -> str:
        """JSON text built from the input: any shape, nested up to ~1,300 levels."""
        kind = self.byte() % 10
        if kind == 0 or (kind >= 7 and level >= _MAX_LEVEL):
            return self.pick(("null", "true", "false", "0", "-0.0", "1e308", "[]", "{}"))
        if kind == 1:
            return str(self.number(8) - 2**63)
        if kind == 2:
            return repr(self.float64())  # nan/inf/-inf come out as invalid JSON on purpose
        if kind == 3:
            return self.number(1) * "9" + "1"  # past 64 bits: the stdlib's path
        if kind == 4:
            return json.dumps(self.text(), ensure_ascii=bool(self.byte() & 1))
        if kind == 5:
            return self.text()  # raw text, likely invalid: the parser's error paths
        if kind == 6:
            depth = self.number(2) % 1300
            inner = self.json_value(level + 1)
            if self.byte() & 1:
                return "[" * depth + inner + "]" * depth
            return '{"d":' * depth + inner + "}" * depth
        items = [self.json_value(level + 1) for _ in range(self.byte() % _MAX_CONTAINER)]
        if kind == 7:
            return "[" + ",".join(items) + "]"
        keys = [json.dumps(self.text()) for _ in items]
        return "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, items, strict=True)) + "}"

    def header_value(self, nesting: int = MAX_HEADER_NESTING, level: int = 0) -> Any:
        """A header value of a type pamqp decodes to: str, bytes, int, bool, float, Decimal,
        datetime, None, dict or list (`nesting` levels at most, as pamqp can), or JSON text."""
        kind = self.byte() % 13
        if kind < 10 or level >= _MAX_LEVEL or nesting < 1:
            return self._scalar(kind % 10)
        if kind == 10:
            count = self.byte() % _MAX_CONTAINER
            return [self.header_value(nesting - 1, level + 1) for _ in range(count)]
        if kind == 11:
            return read_headers(self, nesting - 1, level + 1)
        depth = self.number(2) % nesting + 1
        value = self.header_value(nesting - depth, level + 1)
        for _ in range(depth):
            value = [value] if self.byte() & 1 else {"d": value}
        return value

    def _scalar(self, kind: int) -> Any:
        """A header value that holds no other: `kind` 0-9."""
        readers: tuple[Callable[[], Any], ...] = (
            self.text,
            self.blob,
            lambda: self.number(8) - 2**63,
            lambda: bool(self.byte() & 1),
            self.float64,
            lambda: None,
            lambda: decimal.Decimal(self.number(4) - 2**31).scaleb(-(self.byte() % 10)),
            lambda: datetime.datetime.fromtimestamp(self.number(5) % 253_402_300_800, datetime.UTC),
            self.json_value,
            lambda: str(self.number(4) - 2**31),
        )
        return readers[kind]()


def read_headers(
    reader: Reader, nesting: int = MAX_HEADER_NESTING, level: int = 0
) -> dict[str, Any]:
    """A header table: names the manager reads (or any text) and values of any AMQP type,
    tables and arrays nested `nesting` levels at most."""
    headers: dict[str, Any] = {}
    for _ in range(reader.byte() % 8):
        choice = reader.byte()
        name = HEADER_NAMES[choice % len(HEADER_NAMES)] if choice < 240 else reader.text()
        headers[name] = reader.header_value(nesting, level)
    return headers


def json_text(value: Any) -> str:
    """Compact JSON text of `value`, as a seed's `Writer.json` writes it."""
    return json.dumps(value, separators=(",", ":"))


class Writer:
    """Writes what `Reader` reads back, for seed inputs."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def byte(self, value: int) -> Writer:
        """One byte (a choice: `Reader.pick` takes it modulo the number of options)."""
        self._parts.append(bytes([value % 256]))
        return self

    def number(self, value: int, size: int) -> Writer:
        """`value` as `size` big-endian bytes."""
        self._parts.append(value.to_bytes(size, "big"))
        return self

    def blob(self, value: bytes) -> Writer:
        """`value` with its two-byte length."""
        return self.number(len(value), 2).raw(value)

    def text(self, value: str) -> Writer:
        """`value` as a UTF-8 blob."""
        return self.blob(value.encode())

    def raw(self, value: bytes) -> Writer:
        """`value` as it is."""
        self._parts.append(value)
        return self

    def json(self, value: Any) -> Writer:
        """`value` as the raw-text kind of `Reader.json_value` (its JSON text)."""
        return self.byte(5).text(json_text(value))

    def header_text(self, name: str, value: str) -> Writer:
        """One header whose value is text (name one of HEADER_NAMES)."""
        return self.byte(HEADER_NAMES.index(name)).byte(0).text(value)

    def header_int(self, name: str, value: int) -> Writer:
        """One header whose value is an int."""
        return self.byte(HEADER_NAMES.index(name)).byte(2).number(value + 2**63, 8)

    def data(self) -> bytes:
        """Everything written."""
        return b"".join(self._parts)
