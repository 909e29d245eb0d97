"""Texts as both journals can store them: one rule for SQLite and PostgreSQL alike. Pure.

Two kinds of character cannot go into a journal as they are: NUL (PostgreSQL's `text` refuses
it) and lone surrogates, U+D800 to U+DFFF (no UTF-8 can encode them, so both drivers fail).
Wire texts may hold either: a trigger's `reply_to` or correlation id, a stray reply's step, an
error header; a JSON string may hold `\\u0000` or a lone `\\ud800` escape.

- In a plain text column (ids, step names, message ids, statuses...) each such character is
  stored as U+FFFD, the replacement character (`storable_text`). Every id the journal is
  asked about (a sent mark, a read's parameters) goes through the same function, so a row is
  found by the id it was written with. Job ids and step names of real jobs never hold either
  character (ids are UUIDs, step names come from the config): only stray texts are changed.
- In a JSON text column (payloads, results, meta...) nothing is lost: JSON writes NUL as the
  escape `\\u0000` anyway, and a lone surrogate is written as its `\\udXXX` escape
  (`storable_json`), which reads back as the same string. Both are plain ASCII in the column.
  (PostgreSQL's `::jsonb` refuses those two escapes: a query casting such a row fails.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from workflow_manager.engine import jsontext

__all__ = [
    "REPLACEMENT",
    "storable_text",
    "storable_optional",
    "storable_json",
    "storable_params",
    "StorableReads",
]

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` with each NUL and lone surrogate as U+FFFD (`text` itself when it has none)."""
    if text.isascii():
        # The common case: ids and names. Only NUL can be wrong in ASCII.
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    return _UNSTORABLE.sub(REPLACEMENT, text)


def storable_optional(text: str | None) -> str | None:
    """`storable_text` for a column that may be NULL."""
    return None if text is None else storable_text(text)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def storable_json(value: Any) -> str:
    """`value` as compact JSON text that both journals store and read back unchanged.

    TypeError or ValueError when `value` is not JSON-serialisable.
    """
    text = jsontext.dumps_text(value)
    if text.isascii():
        return text
    # A surrogate can only be inside a JSON string here (the encoder writes no other
    # non-ASCII), where its escape means the same character.
    return _SURROGATE.sub(_escape, text)


def _param(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):  # PostgreSQL's `= ANY(?)`
        return [storable_text(v) if isinstance(v, str) else v for v in value]
    return value


def storable_params(values: Iterable[Any]) -> tuple[Any, ...]:
    """A query's parameters with each text (and each text in a list) as `storable_text` has
    it, so that a lookup by a wire-given id finds the row written for it."""
    return tuple(_param(value) for value in values)


class StorableReads:
    """A journal's reads (`queries.Reads`) whose parameters go through `storable_params`."""

    def __init__(self, reads: Any) -> None:
        self._reads = reads

    async def execute_fetchall(self, sql: str, parameters: Iterable[Any] | None = None) -> Any:
        """Run `sql` on the wrapped reads with storable parameters."""
        params = None if parameters is None else storable_params(parameters)
        return await self._reads.execute_fetchall(sql, params)
