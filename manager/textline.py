"""Text for one-line displays (CLI tables, journal listings): control characters escaped. Pure."""

from __future__ import annotations

__all__ = ["one_line", "body_preview"]

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
