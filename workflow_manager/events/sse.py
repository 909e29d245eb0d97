"""Server-Sent Events on the wire: writing an event, and reading a stream back. Pure.

    id: 1732441234567-42
    event: job.completed
    data: {"type": "job.completed", "job": "...", ...}

The `event:` field lets a browser's `EventSource` listen per type; `reset` and `overflow` are
the stream's own (see `workflow_manager.api.events`). A line starting with `:` is a comment
(heartbeat).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

__all__ = ["SseMessage", "format_event", "comment", "read_events"]


def format_event(kind: str, data: dict[str, Any], event_id: str | None = None) -> str:
    """One SSE message; `data` is JSON on one line, so it never spans `data:` lines."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def comment(text: str) -> str:
    """An SSE comment: ignored by clients, it keeps an idle connection alive through proxies."""
    return f": {text}\n\n"


@dataclass(frozen=True, slots=True)
class SseMessage:
    """One message read from a stream: its `event` (default "message"), id and data text."""

    event: str
    data: str
    id: str | None

    def json(self) -> Any:
        """The data as JSON."""
        return json.loads(self.data)


async def read_events(lines: AsyncIterator[str]) -> AsyncIterator[SseMessage]:
    """The messages of an SSE stream given line by line (as httpx's `aiter_lines` gives it)."""
    event, event_id = "", None
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SseMessage(event or "message", "\n".join(data), event_id)
            event, event_id, data = "", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id":
            event_id = value
