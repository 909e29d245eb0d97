"""The requests the kit sends, shaped exactly as the manager shapes them. Pure: ids passed in."""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Mapping
from typing import Any

from workflow_manager.conformance.model import SentRequest
from workflow_manager.transport.naming import HEADER_ATTEMPT, HEADER_WORKFLOW

__all__ = [
    "WORKFLOW",
    "LARGE_INPUT_BYTES",
    "UNICODE_TEXT",
    "UNKNOWN_HEADERS",
    "step_name_for",
    "build_request",
    "encode_input",
    "large_input",
    "unicode_input",
    "PAYLOAD_KEY",
    "PAYLOAD_BYTES",
    "payload_value",
    "with_reference",
]

WORKFLOW = "conformance"  # the x-workflow header of every request the kit sends
LARGE_INPUT_BYTES = 1024 * 1024
# Scripts from several planes, a combining accent, an emoji ZWJ sequence and U+2028 (a line
# separator that naive JSON-in-JavaScript handling once broke).
UNICODE_TEXT = (
    "Grüße, Ελληνικά, Русский, 日本語, العربية, עברית, हिन्दी; "
    "e\u0301 (combining); 👩\u200d💻 🎉 𝄞; line\u2028separator"
)
# Headers no worker knows: a conforming worker ignores them (and must not fail on their types).
UNKNOWN_HEADERS: Mapping[str, Any] = {
    "x-unknown": "ignore me",
    "x-unknown-number": 42,
    "x-unknown-flag": True,
    "x-unknown-table": {"nested": "value", "n": 1},
    "x-conformance-note": "sent by workflow-manager conformance",
}

# The key under which the payload rules send a reference, and the size of the stored value:
# over the 256 KiB a worker stores replies above, so an echo worker with a store replies with a
# reference of its own.
PAYLOAD_KEY = "conformance_payload"
PAYLOAD_BYTES = 300 * 1024
_PAYLOAD_ALPHABET = string.ascii_letters + string.digits + "      .,"

_STEP = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def step_name_for(queue: str) -> str:
    """A step name for `queue` as the manager would have it (`^[A-Za-z][A-Za-z0-9_-]*$`).

    The queue itself when valid, else its last dot-separated part (a prefixed queue like
    `staging.segment-word-counts`), else the queue with other characters replaced by `-`.
    """
    for candidate in (queue, queue.rsplit(".", 1)[-1]):
        if _STEP.match(candidate):
            return candidate
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", queue)
    return cleaned if cleaned[:1].isalpha() else f"s{cleaned}"


def encode_input(data: Mapping[str, Any]) -> bytes:
    """The body for a step input: UTF-8 JSON with non-ASCII characters as UTF-8, not escapes."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def build_request(
    job_id: str,
    step: str,
    data: Mapping[str, Any],
    *,
    attempt: int = 1,
    extra_headers: Mapping[str, Any] | None = None,
) -> SentRequest:
    """The request the manager would send for attempt `attempt` of `step` in job `job_id`."""
    headers = {HEADER_WORKFLOW: WORKFLOW, HEADER_ATTEMPT: attempt, **(extra_headers or {})}
    return SentRequest(
        correlation_id=f"{job_id}:{step}",
        message_id=f"{job_id}:{step}:{attempt}",
        attempt=attempt,
        headers=headers,
        input=dict(data),
        body=encode_input(data),
    )


def large_input(base: Mapping[str, Any], size_bytes: int = LARGE_INPUT_BYTES) -> dict[str, Any]:
    """`base` plus a `conformance_padding` string that makes the body at least `size_bytes`."""
    words = "lorem ipsum dolor sit amet, consectetur adipiscing elit; "
    padding = (words * (size_bytes // len(words) + 1))[:size_bytes]
    return {**base, "conformance_padding": padding}


def unicode_input(base: Mapping[str, Any]) -> dict[str, Any]:
    """`base` plus non-ASCII text, in a value and in a key."""
    return {**base, "conformance_text": UNICODE_TEXT, "conformance_ключ": "значение ✓"}


def payload_value(seed: str, size_bytes: int = PAYLOAD_BYTES) -> str:
    """A string whose JSON text is `size_bytes` long: letters, digits and spaces drawn from a
    generator seeded with `seed`, so it does not compress to nothing on the way."""
    draw = random.Random(seed)  # test data, not a secret
    return "".join(draw.choices(_PAYLOAD_ALPHABET, k=size_bytes - 2))  # 2: the quotes


def with_reference(base: Mapping[str, Any], reference: Mapping[str, Any]) -> dict[str, Any]:
    """`base` plus the reference object under PAYLOAD_KEY."""
    return {**base, PAYLOAD_KEY: dict(reference)}
