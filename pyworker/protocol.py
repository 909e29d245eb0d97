"""The wire protocol, pure: header names, request decoding and reply encoding.

A request body is a JSON object; a reply body is a JSON object too. A failed step is answered
with headers `x-error` (a message) and `x-error-type` (the exception class name) and the body
`{"error": {"type": ..., "message": ...}}`. Every reply echoes the request's `x-attempt`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyworker.errors import InvalidRequest, InvalidResult

__all__ = [
    "CONTENT_TYPE",
    "HEADER_ATTEMPT",
    "HEADER_ERROR",
    "HEADER_ERROR_TYPE",
    "HEADER_META",
    "HEADER_META_PATCH",
    "HEADER_TRACEPARENT",
    "HEADER_WORKFLOW",
    "Reply",
    "decode_request",
    "error_reply",
    "header_text",
    "parse_attempt",
    "parse_meta",
    "result_reply",
    "split_correlation_id",
]

CONTENT_TYPE = "application/json"
HEADER_ATTEMPT = "x-attempt"
HEADER_WORKFLOW = "x-workflow"
HEADER_ERROR = "x-error"
HEADER_ERROR_TYPE = "x-error-type"
HEADER_TRACEPARENT = "traceparent"  # W3C trace context: the span of this step attempt
HEADER_META = "x-meta"  # the job's metadata, a JSON object
HEADER_META_PATCH = "x-meta-patch"  # a reply's addition to it, deep-merged by the manager
_MAX_ERROR_CHARS = 4000  # keep x-error headers (and log lines) a readable size


@dataclass(frozen=True)
class Reply:
    """An encoded reply: the JSON body and the headers to send with it."""

    body: bytes
    headers: dict[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        """Whether this reply reports a failure (carries `x-error`)."""
        return HEADER_ERROR in self.headers


def decode_request(body: bytes) -> dict[str, Any]:
    """The request's JSON object; raises InvalidRequest when the body is not one."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        preview = body[:80].decode("utf-8", errors="replace")
        raise InvalidRequest(f"request body is not valid JSON ({exc}): {preview!r}") from exc
    if not isinstance(data, dict):
        raise InvalidRequest(
            f"request body must be a JSON object, got {type(data).__name__}: {str(data)[:80]}"
        )
    return data


def result_reply(
    result: object, attempt: int, meta_patch: Mapping[str, Any] | None = None
) -> Reply:
    """The reply for a handler's return value; InvalidResult unless it is a JSON object or None.

    A non-empty `meta_patch` goes in the `x-meta-patch` header."""
    if result is None:
        result = {}
    if not isinstance(result, Mapping):
        raise InvalidResult(
            f"a step must return a JSON object (dict) or None, got {type(result).__name__}: "
            f"{str(result)[:80]} (wrap it, e.g. return {{'value': ...}})"
        )
    try:
        body = json.dumps(result, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidResult(f"a step's result is not JSON-serialisable: {exc}") from exc
    headers: dict[str, Any] = {HEADER_ATTEMPT: attempt}
    if meta_patch:
        try:
            headers[HEADER_META_PATCH] = json.dumps(meta_patch, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidResult(f"a metadata patch is not JSON-serialisable: {exc}") from exc
    return Reply(body=body, headers=headers)


def error_reply(exc: BaseException, attempt: int) -> Reply:
    """The x-error reply for `exc`: `x-error` is "Type: message", `x-error-type` the class name."""
    error_type = type(exc).__name__
    detail = str(exc).strip()
    message = f"{error_type}: {detail}" if detail else error_type
    if len(message) > _MAX_ERROR_CHARS:
        message = message[: _MAX_ERROR_CHARS - 3] + "..."
    body = json.dumps({"error": {"type": error_type, "message": message}}, ensure_ascii=False)
    headers = {HEADER_ATTEMPT: attempt, HEADER_ERROR: message, HEADER_ERROR_TYPE: error_type}
    return Reply(body=body.encode("utf-8"), headers=headers)


def header_text(value: object) -> str | None:
    """A header value as text (AMQP strings may arrive as bytes); None when absent."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def parse_meta(value: object) -> dict[str, Any]:
    """The job metadata in an `x-meta` header: a JSON object; {} when absent or not one."""
    text = header_text(value)
    if text is None:
        return {}
    try:
        meta = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return meta if isinstance(meta, dict) else {}


def parse_attempt(value: object) -> int | None:
    """The 1-based attempt from an `x-attempt` header value; None when absent or not a number."""
    text = header_text(value)
    if isinstance(value, bool) or text is None:
        return None
    try:
        attempt = int(text)
    except ValueError:
        return None
    return attempt if attempt >= 1 else None


def split_correlation_id(correlation_id: str | None) -> tuple[str, str | None]:
    """`(job_id, step)` from `<job-id>:<step-name>`; the step is None when there is no colon."""
    if not correlation_id:
        return "", None
    job_id, sep, step = correlation_id.rpartition(":")
    if not sep or not job_id or not step:
        return correlation_id, None
    return job_id, step
