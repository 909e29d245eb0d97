"""`serve`'s options for the manager's limits and its browser session (docs/security.md).

Each limit has a default that suits one manager next to systems it does not control, an
option, and an environment variable; `limits_from_args` checks them all and says which one is
wrong. The values go to `ManagerSettings` (messages) and `HttpSettings` (the HTTP server).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workflow_manager.errors import ManagerError
from workflow_manager.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from pydantic import ValidationError

    from workflow_manager.settings import HttpSettings

__all__ = ["add_limit_options", "limits_from_args", "LimitError"]

_MANAGER_FIELDS = frozenset({"max_message_bytes", "max_json_depth", "max_fanout_bytes"})

# option, settings field, env variable, type, metavar, help (the default is appended)
_OPTIONS: tuple[tuple[str, str, str, type, str, str], ...] = (
    ("--max-message-bytes", "max_message_bytes", "WM_MAX_MESSAGE_BYTES", int, "BYTES",
     "a trigger or signal body past this is dead-lettered, a reply past it fails its step; "
     "RabbitMQ's own max_message_size must allow it"),
    ("--max-json-depth", "max_json_depth", "WM_MAX_JSON_DEPTH", int, "N",
     "JSON nested deeper than N levels is refused (triggers, replies, signals, x-meta, HTTP "
     "bodies): 64 to 250"),
    ("--max-fanout-bytes", "max_fanout_bytes", "WM_MAX_FANOUT_BYTES", int, "BYTES",
     "a task step whose children's inputs together pass this fails, naming the size"),
    ("--max-body-bytes", "max_body_bytes", "WM_MAX_BODY_BYTES", int, "BYTES",
     "HTTP request bodies past this are refused with 413, as they stream in (never held whole)"),
    ("--max-header-bytes", "max_header_bytes", "WM_MAX_HEADER_BYTES", int, "BYTES",
     "an HTTP request line and headers past this are refused with 431"),
    ("--max-url-bytes", "max_url_bytes", "WM_MAX_URL_BYTES", int, "BYTES",
     "an HTTP path and query past this are refused with 414"),
    ("--http-idle-timeout", "idle_timeout_s", "WM_HTTP_IDLE_TIMEOUT", float, "SECONDS",
     "an idle kept-alive HTTP connection is closed after this"),
    ("--http-request-timeout", "request_timeout_s", "WM_HTTP_REQUEST_TIMEOUT", float, "SECONDS",
     "a request's headers and body must arrive within this; slower clients get 408 and are "
     "cut off"),
    ("--max-connections", "max_connections", "WM_MAX_CONNECTIONS", int, "N",
     "HTTP connections (and requests in progress) at once; past it 503 with Retry-After"),
    ("--max-event-streams", "max_event_streams", "WM_MAX_EVENT_STREAMS", int, "N",
     "open GET /api/events streams at once; past it 503 with Retry-After"),
    ("--session-ttl", "session_ttl_s", "WM_SESSION_TTL", float, "SECONDS",
     "a web UI login lasts this long"),
    ("--login-attempts-per-minute", "login_attempts_per_minute", "WM_LOGIN_ATTEMPTS", int, "N",
     "wrong logins answered per client address and minute; past it 429"),
)  # fmt: skip


class LimitError(ManagerError):
    """A limit option (or its environment variable) is not a usable value."""


def _default(field: str) -> str:
    defaults: Mapping[str, object] = DEFAULT_LIMITS  # looked up by a field name known at run time
    value = defaults[field]
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_limit_options(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    """Add the limits' options to `serve`'s parser, their defaults from `env` where set."""
    group = parser.add_argument_group(
        "limits and the browser session", "every limit, and what a client sees past it: "
        "docs/security.md",
    )  # fmt: skip
    for option, field, variable, _, metavar, text in _OPTIONS:
        group.add_argument(
            option,
            dest=field,
            default=env.get(variable) or None,
            metavar=metavar,
            help=f"{text} (env {variable}; default: {_default(field)})",
        )
    group.add_argument(
        "--allowed-hosts",
        default=env.get("WM_ALLOWED_HOSTS") or None,
        metavar="HOST[,HOST...]",
        help="Host headers answered besides the bound address, localhost, 127.0.0.1 and [::1]:"
        " the names clients use to reach the manager (env WM_ALLOWED_HOSTS)",
    )
    group.add_argument(
        "--forwarded-allow-ips",
        default=env.get("WM_FORWARDED_ALLOW_IPS") or None,
        metavar="IP[,IP...]",
        help="proxies whose X-Forwarded-Proto and X-Forwarded-For are believed ('*' any; env "
        "WM_FORWARDED_ALLOW_IPS; default: none)",
    )


def limits_from_args(args: argparse.Namespace) -> tuple[dict[str, Any], HttpSettings]:
    """The `ManagerSettings` fields and the `HttpSettings` the options give; LimitError
    naming the option when one is not a usable value."""
    # Here, not at the top: building the command line's parser loads no pydantic.
    from pydantic import ValidationError

    from workflow_manager.settings import HttpSettings, ManagerSettings  # loads the broker's client

    manager: dict[str, Any] = {}
    http: dict[str, Any] = {}
    for option, field, variable, kind, _, _ in _OPTIONS:
        raw = getattr(args, field, None)
        if raw is None:
            continue
        try:
            value = kind(str(raw).strip())
        except ValueError:
            noun = "whole number" if kind is int else "number"
            raise LimitError(f"{option} (or {variable}) must be a {noun}, got {raw!r}") from None
        (manager if field in _MANAGER_FIELDS else http)[field] = value
    if args.allowed_hosts:
        hosts = tuple(h.strip().lower() for h in args.allowed_hosts.split(",") if h.strip())
        http["allowed_hosts"] = hosts
    if args.forwarded_allow_ips:
        http["forwarded_allow_ips"] = args.forwarded_allow_ips.strip()
    try:
        ManagerSettings(**manager)
        settings = HttpSettings(**http)
    except ValidationError as exc:
        raise LimitError(_validation_message(exc)) from None
    return manager, settings


def _validation_message(exc: ValidationError) -> str:
    """The first problem, named by its option: '--max-json-depth must be ... got 10'."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    option = next((o for o, f, *_ in _OPTIONS if f == field), field)
    return f"{option}: {error['msg'].lower()}, got {error.get('input')!r}"
