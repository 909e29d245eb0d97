"""The defaults of the manager's limits, in one place (docs/security.md lists each one).

Plain numbers, importing nothing but the pure engine (whose rules some of them are), so the
CLI can show them in `--help` without loading the broker's client.
"""

from __future__ import annotations

from typing import TypedDict

from workflow_manager.engine.fanout import DEFAULT_MAX_FANOUT_BYTES

__all__ = [
    "DEFAULT_JSON_DEPTH",
    "DEFAULT_LIMITS",
    "Limits",
    "MAX_MESSAGE_BYTES",
]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message body the manager takes or sends, as RabbitMQ's own default allows."""

DEFAULT_JSON_DEPTH = 128
"""JSON nested deeper than this (objects and lists inside each other) is refused at the edge."""


class Limits(TypedDict):
    """The limits by settings field, each with the type of its field."""

    max_message_bytes: int
    max_json_depth: int
    max_fanout_bytes: int
    max_body_bytes: int
    max_header_bytes: int
    max_url_bytes: int
    idle_timeout_s: float
    request_timeout_s: float
    max_connections: int
    max_event_streams: int
    session_ttl_s: float
    login_attempts_per_minute: int


DEFAULT_LIMITS: Limits = {
    "max_message_bytes": MAX_MESSAGE_BYTES,
    "max_json_depth": DEFAULT_JSON_DEPTH,
    "max_fanout_bytes": DEFAULT_MAX_FANOUT_BYTES,
    "max_body_bytes": MAX_MESSAGE_BYTES,
    "max_header_bytes": 16 * 1024,
    "max_url_bytes": 8 * 1024,
    "idle_timeout_s": 5.0,
    "request_timeout_s": 30.0,
    "max_connections": 4096,
    "max_event_streams": 1000,
    "session_ttl_s": 12 * 3600.0,
    "login_attempts_per_minute": 10,
}
"""Each limit's default, by its settings field (`ManagerSettings`, `HttpSettings`)."""
