"""Reading a worker's reply body as JSON, strictly. Pure."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from workflow_manager.engine import jsontext
from workflow_manager.engine.jsontext import json_type

__all__ = ["ReplyError", "decode_json", "decode_output", "too_deep"]

_MAX_PREVIEW = 60


class ReplyError(Exception):
    """A reply body is not a JSON object; the message says what it was instead."""


def _preview(body: bytes) -> str:
    text = body[:_MAX_PREVIEW].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(body) > _MAX_PREVIEW else ""))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_float(text: str) -> float:
    # Python reads 1e999 as inf, which would go out to the next worker as invalid JSON.
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range")
    return value


def decode_json(body: bytes, what: str = "reply", max_depth: int = jsontext.MAX_DEPTH) -> Any:
    """Strictly parse a message body: UTF-8 JSON with no NaN or infinities, nested at most
    `max_depth` levels; ReplyError if not."""
    value = jsontext.fast_loads(body)
    if value is jsontext.UNDECIDED:
        value = _stdlib_loads(body, what)
    if jsontext.deeper_than(body, value, max_depth):
        raise ReplyError(too_deep(f"{what} body", max_depth))
    return value


def too_deep(what: str, max_depth: int) -> str:
    """Why JSON nested past `max_depth` is refused (`what`: "trigger body", a header...)."""
    return (
        f"{what} is nested more than {max_depth} levels deep (objects and lists inside "
        f"each other); the limit is {max_depth} (the manager's --max-json-depth)"
    )


def _stdlib_loads(body: bytes, what: str) -> Any:
    """The stdlib path: its error messages, a BOM, and the checks orjson already made."""
    try:
        # Decode explicitly: json.loads(bytes) would also accept UTF-16 and UTF-32.
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReplyError(f"{what} body is not UTF-8 text: {_preview(body)}") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, RecursionError):
            reason = "nested too deeply"
        else:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ReplyError(f"{what} body is not valid JSON ({reason}): {_preview(body)}") from None
    if _SURROGATE_ESCAPE.search(text) and not _encodable(value):
        raise ReplyError(
            f"{what} body is not valid JSON (a \\u escape names half a surrogate pair, "
            f"which is no character): {_preview(body)}"
        )
    return value


# A \uD800-\uDFFF escape: a pair of them is one character; a lone one cannot be encoded.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def decode_output(body: bytes) -> dict[str, Any]:
    """The step output a reply body holds: a JSON object, with an empty body meaning `{}`."""
    if not body.strip():
        return {}
    value = decode_json(body)
    if not isinstance(value, dict):
        found = json_type(value)
        raise ReplyError(f"reply body must be a JSON object, got {found}: {_preview(body)}")
    return value
