"""Text for displays (CLI tables, journal listings, API bodies): one-line text with control
characters escaped, and times as ISO-8601. Pure."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["one_line", "body_preview", "iso_utc"]

# Control characters would break a one-line-per-row layout: show them escaped.
_ESCAPES = {code: f"\\x{code:02x}" for code in range(32)} | {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    0x7F: "\\x7f",
}


def one_line(text: str, width: int) -> str:
    """`text` with control characters escaped, cut to `width` characters with an ellipsis."""
    text = text.translate(_ESCAPES)
    return text if len(text) <= width else text[: width - 1] + "…"


def body_preview(body: bytes, width: int) -> str:
    """A message body as one line of text, or its size when it is not UTF-8."""
    try:
        return one_line(bytes(body).decode("utf-8"), width)
    except UnicodeDecodeError:
        return f"<{len(body)} bytes, not UTF-8>"


def iso_utc(at: float) -> str:
    """Unix seconds as ISO-8601 UTC with milliseconds and a `Z`, as Go's RFC 3339 parser expects."""
    text = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
    return text.removesuffix("+00:00") + "Z"
