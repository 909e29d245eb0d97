"""The manager's log lines: readable text, or one JSON object a line for log shippers.

A line about a job carries its ids as fields (`extra={"job": ..., "workflow": ..., "step": ...}`
at the call site), so a shipper can index them without parsing the message.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["CONTEXT_FIELDS", "LOG_FORMATS", "JsonFormatter", "configure_logging"]

LOG_FORMATS = ("text", "json")
CONTEXT_FIELDS = ("job", "workflow", "step", "attempt", "bulk")
"""Record attributes (set through `extra=`) copied into a JSON line when present."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """A record as one JSON line: time, level, logger, message, and job fields where set."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as compact JSON (no newline inside: tracebacks are escaped)."""
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """Send every logger's lines to `stream` (stderr) in `log_format` ("text" or "json")."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    # Their INFO lines are per connection and channel: noise beside the manager's own.
    logging.getLogger("aio_pika").setLevel(logging.WARNING)
    logging.getLogger("aiormq").setLevel(logging.WARNING)
