"""The kit's settings, checked once at the edge: inputs are JSON objects, the timeout positive,
the payload store `NAME=URL`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from payload_refs import StoreSpec

__all__ = [
    "KitSettings",
    "SettingsError",
    "StoreUnavailable",
    "parse_input",
    "parse_payload_store",
    "ECHO_FAILING_INPUT",
    "DEFAULT_INPUT",
]

DEFAULT_INPUT: Mapping[str, Any] = {
    "text": "hello, worker",
    "n": 3,
    "ratio": 0.5,
    "flags": [True, False, None],
    "nested": {"list": [1, 2, 3], "empty": {}},
}
ECHO_FAILING_INPUT: Mapping[str, Any] = {"fail": True}  # the echo workers' contract
_PASSWORD = re.compile(r"(://[^:/@\s'\"]*:)[^@\s'\"]*@")  # scheme://user:PASSWORD@


class SettingsError(ValueError):
    """A bad option value; the message names the option and shows the value."""


class StoreUnavailable(Exception):
    """The kit cannot use its --payload-store (cannot write its value there, say)."""


@dataclass(frozen=True)
class KitSettings:
    """What to test and how: the worker's queue, the broker, the inputs, the patience."""

    queue: str
    amqp_url: str = field(repr=False)
    input: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_INPUT))
    failing_input: Mapping[str, Any] | None = None
    timeout_s: float = 10.0
    echo: bool = False
    concurrency: int = 50
    payload_store: str | None = field(default=None, repr=False)  # NAME=URL, the worker's too

    def __post_init__(self) -> None:
        if not self.queue:
            raise SettingsError("QUEUE is empty; give the queue the worker consumes")
        if not self.timeout_s > 0:
            raise SettingsError(
                f"--timeout must be a number of seconds above 0, got {self.timeout_s}"
            )
        if self.echo and self.failing_input is None:
            object.__setattr__(self, "failing_input", dict(ECHO_FAILING_INPUT))
        if self.payload_store is not None:
            parse_payload_store(self.payload_store)

    @property
    def store_spec(self) -> StoreSpec | None:
        """The --payload-store as a StoreSpec, or None when there is none."""
        return None if self.payload_store is None else parse_payload_store(self.payload_store)

    def __repr__(self) -> str:
        from workflow_manager.transport.broker import mask_url  # loads aio-pika: only when shown

        store = None if self.payload_store is None else _masked(self.payload_store)
        return (
            f"KitSettings(queue={self.queue!r}, amqp_url={mask_url(self.amqp_url)!r}, "
            f"timeout_s={self.timeout_s}, echo={self.echo}, payload_store={store!r})"
        )


def parse_input(text: str, option: str) -> dict[str, Any]:
    """The JSON object in `text`, or SettingsError naming `option` and what is wrong."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{option} is not valid JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise SettingsError(
            f"{option} must be a JSON object (a step input), got {type(value).__name__}: "
            f"{text[:80]!r}"
        )
    return value


def _masked(text: str) -> str:
    """`text` with the password of each URL in it replaced by `***` (a PostgreSQL store's)."""
    return _PASSWORD.sub(r"\1***@", text)


def parse_payload_store(text: str) -> StoreSpec:
    """`NAME=URL` (`main=file:///srv/wm-payloads`) as a StoreSpec, or SettingsError saying what
    is wrong, without the URL's password."""
    # Lazy: the pyworker package loads aio-pika, which building the CLI's parser need not.
    from payload_refs import parse_store

    try:
        return parse_store(text, "--payload-store")
    except ValueError as exc:
        raise SettingsError(_masked(str(exc))) from None
