"""Schemathesis hooks (SCHEMATHESIS_HOOKS): the two rules of the API that OpenAPI cannot express.

`POST /api/workflow/{name}` takes the job id from `?id=` or from a string `id` in the body;
when both are given they must name the same job (else 400, as the parameter's description
says). JSON Schema cannot relate a query parameter to a body field, nor a time to the present
(`?not_before=` at most ten years from now, docs/security.md), so the cases that break those
rules are not generated as if they were valid.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import schemathesis

from workflow_manager.starttimes import StartTimeError, start_time


def _canonical(value: Any) -> str | None:
    try:
        return str(uuid.UUID(value)) if isinstance(value, str) else None
    except ValueError:
        return None


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    """False for a submission whose `?id=` and body `id` name two different jobs, or whose
    `?not_before=` is more than ten years from now."""
    if _too_far(str((case.query or {}).get("not_before", ""))):
        return False
    query_id = (case.query or {}).get("id")
    body_id = case.body.get("id") if isinstance(case.body, dict) else None
    if query_id is None or not isinstance(body_id, str):
        return True
    return _canonical(query_id) is None or _canonical(query_id) == _canonical(body_id)


def _too_far(not_before: str) -> bool:
    """True for a `?not_before=` the manager refuses only for being too far ahead."""
    if not not_before:
        return False
    try:
        start_time(None, not_before, time.time(), "delay", "not_before")
    except StartTimeError as exc:
        return "more than ten years" in str(exc)
    return False
