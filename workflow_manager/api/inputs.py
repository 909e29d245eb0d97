"""Reading what a client sent: the JSON payload of a submission, and job ids. Pure.

Each function raises `fastapi.HTTPException(400)` with a message saying what was wrong.
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException

from workflow_manager.engine.ids import canonical_uuid
from workflow_manager.engine.jsontext import json_type
from workflow_manager.engine.replies import ReplyError, decode_json
from workflow_manager.intake import Undeliverable, trigger_meta
from workflow_manager.limits import DEFAULT_JSON_DEPTH
from workflow_manager.starttimes import StartTimeError, start_time

__all__ = ["parse_meta", "parse_payload", "parse_job_id", "resolve_job_id", "parse_start_time"]

_EXAMPLE_ID = "3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"


def _bad_request(message: str) -> HTTPException:
    return HTTPException(status_code=400, detail=message)


def parse_meta(
    query: str | None, header: str | None, max_depth: int = DEFAULT_JSON_DEPTH
) -> dict[str, Any] | None:
    """Job metadata from the `meta` query parameter or the `x-meta` header (a JSON object)."""
    if query is not None and header is not None:
        raise _bad_request(
            "give job metadata once: the 'meta' query parameter or the 'x-meta' header"
        )
    if query is not None:
        meta = trigger_meta(query, "query parameter 'meta'", max_depth)
    else:
        meta = trigger_meta(header, "header 'x-meta'", max_depth)
    if isinstance(meta, Undeliverable):
        raise _bad_request(f"{meta.reason}; e.g. {{\"tenant\": \"acme\"}}")
    return meta


def parse_payload(
    raw: bytes, what: str = "the job payload", max_depth: int = DEFAULT_JSON_DEPTH
) -> dict[str, Any]:
    """The JSON object a request body holds (`what` says what it is, for the error), nested
    at most `max_depth` levels."""
    if not raw.strip():
        raise _bad_request(f"request body is empty; send {what} as a JSON object, e.g. {{}}")
    try:
        value = decode_json(raw, "request", max_depth)
    except ReplyError as exc:
        raise _bad_request(str(exc)) from None
    if not isinstance(value, dict):
        kind = json_type(value)
        raise _bad_request(
            f"request body must be a JSON object ({what}), got {kind}; "
            'wrap it in an object, e.g. {"items": [...]}'
        )
    return value


def parse_job_id(value: str, what: str) -> str:
    """`value` as a canonical job id (a UUID); `what` names where it came from, for the error."""
    canonical = canonical_uuid(value)
    if canonical is None:
        raise _bad_request(f"{what} {value!r} is not a UUID (e.g. {_EXAMPLE_ID})")
    return canonical


def resolve_job_id(query_id: str | None, payload: dict[str, Any]) -> str | None:
    """The job id a submission asks for: `?id=` and/or a string `id` in the body; None if neither.

    When both are given they must name the same UUID (in any letter case).
    """
    from_query = parse_job_id(query_id, "query parameter 'id'") if query_id is not None else None
    body_id = payload.get("id")
    from_body = None
    if isinstance(body_id, str):
        from_body = parse_job_id(body_id, "body field 'id' (taken as the job id)")
    if from_query and from_body and from_query != from_body:
        raise _bad_request(
            f"two different job ids: query parameter 'id' is {query_id!r} but body field 'id' "
            f"is {body_id!r}; give one of them, or make them equal"
        )
    return from_query or from_body


def parse_start_time(delay: str | None, not_before: str | None, now: float) -> float | None:
    """When a submission asks its job to start (`?delay=` / `?not_before=`), or None: now."""
    try:
        return start_time(
            delay, not_before, now, "query parameter 'delay'", "query parameter 'not_before'"
        )
    except StartTimeError as exc:
        raise _bad_request(str(exc)) from None
