"""W3C trace context (https://www.w3.org/TR/trace-context/): ids and the `traceparent` text. Pure.

A job's trace id comes with its submission; every span id is derived from what the journal
holds (the job id, the step, the attempt), so a replay or a re-publish names the same spans.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from hashlib import blake2b

__all__ = [
    "TraceParent",
    "derived_trace_id",
    "job_span_id",
    "step_span_id",
    "traceparent",
    "parse_traceparent",
]

_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
# version-traceid-parentid-flags; a later version may append fields after a '-'.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


@dataclass(frozen=True, slots=True)
class TraceParent:
    """A caller's trace context: the trace to join and the caller's span (the new span's parent)."""

    trace_id: str
    span_id: str


def _nonzero(digest: str) -> str:
    # An all-zero id is invalid in W3C trace context; one in 2**64 digests would be one.
    return digest if digest.strip("0") else digest[:-1] + "1"


def derived_trace_id(job_id: str) -> str:
    """The trace id of a job journaled before jobs carried one: its own id's 32 hex digits."""
    try:
        return _nonzero(uuid.UUID(job_id).hex)
    except ValueError:
        return _nonzero(blake2b(job_id.encode(), digest_size=16).hexdigest())


def job_span_id(job_id: str) -> str:
    """The span id of a job (16 hex digits), from its id alone."""
    return _nonzero(blake2b(job_id.encode(), digest_size=8).hexdigest())


def step_span_id(job_id: str, step: str, attempt: int) -> str:
    """The span id of one attempt of a step (16 hex digits); the same on every replay."""
    key = f"{job_id}\x00{step}\x00{attempt}".encode()
    return _nonzero(blake2b(key, digest_size=8).hexdigest())


def traceparent(trace_id: str, span_id: str) -> str:
    """The `traceparent` header naming `span_id` of `trace_id`, sampled."""
    return f"00-{trace_id}-{span_id}-01"


def parse_traceparent(value: object) -> TraceParent | None:
    """A `traceparent` header's trace and span ids, or None when it is not a valid one."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("ascii", errors="replace")
    if not isinstance(value, str):
        return None
    match = _TRACEPARENT.fullmatch(value.strip())
    if match is None:
        return None
    version, trace_id, span_id, _flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    return TraceParent(trace_id, span_id)
