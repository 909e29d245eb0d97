"""Worker settings: validated once, frozen; the broker URL is resolved from the env at start-up."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from payload_refs.resolving import DEFAULT_THRESHOLD
from payload_refs.stores import StoreSpec, parse_stores
from pyworker.errors import SettingsError

__all__ = [
    "DEFAULT_AMQP_URL",
    "PREFIX_ENV_VAR",
    "STORES_ENV_VAR",
    "THRESHOLD_ENV_VAR",
    "URL_ENV_VARS",
    "WorkerSettings",
    "mask_url",
    "parse_store_entries",
    "parse_threshold",
    "store_entries",
    "resolve_amqp_url",
    "resolve_payload_stores",
    "resolve_payloads",
    "resolve_payload_threshold",
    "resolve_queue_prefix",
]

DEFAULT_AMQP_URL = "amqp://guest:guest@localhost:5672/"
URL_ENV_VARS = ("AMQP_URL", "AMQP_SERVER")
PREFIX_ENV_VAR = "QUEUE_PREFIX"
STORES_ENV_VAR = "WM_PAYLOAD_STORES"  # "NAME=URL NAME=URL": where references point; 1st: replies
THRESHOLD_ENV_VAR = "WM_PAYLOAD_REF_THRESHOLD"  # a reply's JSON bytes above which values are stored
_WHOLE_NUMBER = re.compile(r"[0-9]+")
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


def store_entries(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """Payload store entries as a tuple: a string is split at spaces, as the variable is."""
    if value is None:
        return None
    return tuple(value.split()) if isinstance(value, str) else tuple(value)


def parse_store_entries(entries: str | Iterable[str], where: str) -> tuple[StoreSpec, ...]:
    """Payload stores from `NAME=URL` entries (in one string: separated by spaces), in order.

    Raises:
        SettingsError: An entry is not `NAME=URL` with a valid name and a file:// or
            postgresql:// URL, or a name is given twice; the message starts with `where`.
    """
    if isinstance(entries, str):
        text = entries
    else:
        entries = list(entries)
        if not all(isinstance(entry, str) for entry in entries):
            raise SettingsError(f"{where}: expected NAME=URL strings, got {entries!r}")
        text = " ".join(entries)
    try:
        return tuple(parse_stores(text, where))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def parse_threshold(text: str, where: str) -> int:
    """A byte count written as a whole number; SettingsError naming `where` otherwise."""
    if _WHOLE_NUMBER.fullmatch(text.strip()) is None:
        raise SettingsError(
            f"{where}: {text!r} is not a whole number of bytes (e.g. {DEFAULT_THRESHOLD})"
        )
    return int(text)


def resolve_payload_stores(
    explicit: tuple[str, ...] | None, environ: Mapping[str, str]
) -> tuple[StoreSpec, ...]:
    """The payload stores: `explicit` entries, else $WM_PAYLOAD_STORES, else none."""
    if explicit is not None:
        return parse_store_entries(explicit, "payload_stores")
    return parse_store_entries(
        environ.get(STORES_ENV_VAR, ""), f"environment variable {STORES_ENV_VAR}"
    )


def resolve_payload_threshold(explicit: int | None, environ: Mapping[str, str]) -> int:
    """The reply size above which values are stored: `explicit`, else the env, else 256 KiB."""
    if explicit is not None:
        return explicit
    text = environ.get(THRESHOLD_ENV_VAR, "").strip()
    if not text:
        return DEFAULT_THRESHOLD
    return parse_threshold(text, f"environment variable {THRESHOLD_ENV_VAR}")


@dataclass(frozen=True)
class WorkerSettings:
    """How a Worker connects and how much it does at once; `None` URL/prefix mean "from the env"."""

    amqp_url: str | None = None
    prefetch: int = 10
    name: str | None = None
    stop_timeout_s: float = 30.0
    queue_prefix: str | None = None
    # `NAME=URL` entries; None: $WM_PAYLOAD_STORES. May hold a password: kept out of the repr.
    payload_stores: tuple[str, ...] | None = None
    payload_ref_threshold: int | None = None  # None: $WM_PAYLOAD_REF_THRESHOLD, else 256 KiB

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
        self._check_payloads()

    def _check_payloads(self) -> None:
        entries = store_entries(self.payload_stores)
        if entries is not None:
            parse_store_entries(entries, "payload_stores")
            object.__setattr__(self, "payload_stores", entries)  # frozen: normalised once, here
        threshold = self.payload_ref_threshold
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0
        ):
            raise SettingsError(
                f"payload_ref_threshold: expected a whole number of bytes, 0 or more, "
                f"got {threshold!r}"
            )

    def replace(self, **changes: object) -> WorkerSettings:
        """A copy with `changes` applied (and validated); `None` values are ignored."""
        # Any: the values are only known to be fields' values once __post_init__ has checked them.
        kept: dict[str, Any] = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self, **kept)

    def __repr__(self) -> str:
        url = mask_url(self.amqp_url) if self.amqp_url else "<from environment>"
        return f"<WorkerSettings {url} prefetch={self.prefetch} name={self.name!r}>"


def resolve_payloads(
    settings: WorkerSettings, environ: Mapping[str, str]
) -> tuple[tuple[StoreSpec, ...], int]:
    """The payload stores and the reply threshold: the settings', else the environment's."""
    return (
        resolve_payload_stores(settings.payload_stores, environ),
        resolve_payload_threshold(settings.payload_ref_threshold, environ),
    )
