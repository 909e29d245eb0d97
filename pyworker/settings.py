"""Worker settings: validated once, frozen; the broker URL is resolved from the env at start-up."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pyworker.errors import SettingsError

__all__ = [
    "DEFAULT_AMQP_URL",
    "PREFIX_ENV_VAR",
    "URL_ENV_VARS",
    "WorkerSettings",
    "mask_url",
    "resolve_amqp_url",
    "resolve_queue_prefix",
]

DEFAULT_AMQP_URL = "amqp://guest:guest@localhost:5672/"
URL_ENV_VARS = ("AMQP_URL", "AMQP_SERVER")
PREFIX_ENV_VAR = "QUEUE_PREFIX"
_SCHEMES = ("amqp", "amqps")
_MAX_PREFETCH = 65535  # basic.qos prefetch-count is a 16-bit field


def mask_url(url: str) -> str:
    """`url` with its password replaced by `******`, for logs and reprs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":******@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _check_url(url: str, source: str) -> str:
    parts = urlsplit(url)
    try:
        valid = parts.scheme in _SCHEMES and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number
        valid = False
    if not valid:
        raise SettingsError(
            f"{source}: {mask_url(url)!r} is not an AMQP URL (expected e.g. {DEFAULT_AMQP_URL!r})"
        )
    return url


def resolve_amqp_url(explicit: str | None, environ: Mapping[str, str]) -> str:
    """The broker URL: `explicit`, else $AMQP_URL, else $AMQP_SERVER, else localhost."""
    if explicit:
        return _check_url(explicit, "amqp_url")
    for name in URL_ENV_VARS:
        value = environ.get(name, "").strip()
        if value:
            return _check_url(value, f"environment variable {name}")
    return DEFAULT_AMQP_URL


def resolve_queue_prefix(explicit: str | None, environ: Mapping[str, str]) -> str:
    """The prefix for every step queue name: `explicit`, else $QUEUE_PREFIX, else none."""
    if explicit is not None:
        return explicit
    return environ.get(PREFIX_ENV_VAR, "").strip()


@dataclass(frozen=True)
class WorkerSettings:
    """How a Worker connects and how much it does at once; `None` URL/prefix mean "from the env"."""

    amqp_url: str | None = None
    prefetch: int = 10
    name: str | None = None
    stop_timeout_s: float = 30.0
    queue_prefix: str | None = None

    def __post_init__(self) -> None:
        if self.amqp_url is not None:
            _check_url(self.amqp_url, "amqp_url")
        if isinstance(self.prefetch, bool) or not isinstance(self.prefetch, int):
            raise SettingsError(f"prefetch: expected an integer, got {self.prefetch!r}")
        if not 1 <= self.prefetch <= _MAX_PREFETCH:
            raise SettingsError(
                f"prefetch: {self.prefetch} is out of range (1..{_MAX_PREFETCH}); "
                "it is how many requests per step queue the worker handles at once"
            )
        if self.queue_prefix is not None and not isinstance(self.queue_prefix, str):
            raise SettingsError(f"queue_prefix: expected a string, got {self.queue_prefix!r}")
        if self.stop_timeout_s < 0:
            raise SettingsError(f"stop_timeout_s: {self.stop_timeout_s} must be >= 0")

    def replace(self, **changes: object) -> WorkerSettings:
        """A copy with `changes` applied (and validated); `None` values are ignored."""
        # Any: the values are only known to be fields' values once __post_init__ has checked them.
        kept: dict[str, Any] = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self, **kept)

    def __repr__(self) -> str:
        url = mask_url(self.amqp_url) if self.amqp_url else "<from environment>"
        return f"<WorkerSettings {url} prefetch={self.prefetch} name={self.name!r}>"
