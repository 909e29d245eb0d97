"""The kit's settings, checked once at the edge: inputs are JSON objects, the timeout positive."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KitSettings", "SettingsError", "parse_input", "ECHO_FAILING_INPUT", "DEFAULT_INPUT"]

DEFAULT_INPUT: Mapping[str, Any] = {
    "text": "hello, worker",
    "n": 3,
    "ratio": 0.5,
    "flags": [True, False, None],
    "nested": {"list": [1, 2, 3], "empty": {}},
}
ECHO_FAILING_INPUT: Mapping[str, Any] = {"fail": True}  # the echo workers' contract


class SettingsError(ValueError):
    """A bad option value; the message names the option and shows the value."""


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

    def __post_init__(self) -> None:
        if not self.queue:
            raise SettingsError("QUEUE is empty; give the queue the worker consumes")
        if not self.timeout_s > 0:
            raise SettingsError(
                f"--timeout must be a number of seconds above 0, got {self.timeout_s}"
            )
        if self.echo and self.failing_input is None:
            object.__setattr__(self, "failing_input", dict(ECHO_FAILING_INPUT))

    def __repr__(self) -> str:
        from workflow_manager.transport.broker import mask_url  # loads aio-pika: only when shown

        return (
            f"KitSettings(queue={self.queue!r}, amqp_url={mask_url(self.amqp_url)!r}, "
            f"timeout_s={self.timeout_s}, echo={self.echo})"
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
