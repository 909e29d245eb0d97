"""Schemathesis hooks (SCHEMATHESIS_HOOKS): the one rule of the API that OpenAPI cannot express.

`POST /api/workflow/{name}` takes the job id from `?id=` or from a string `id` in the body;
when both are given they must name the same job (else 400, as the parameter's description
says). JSON Schema cannot relate a query parameter to a body field, so the cases that break
that rule are not generated as if they were valid.
"""

from __future__ import annotations

import uuid
from typing import Any

import schemathesis


def _canonical(value: Any) -> str | None:
    try:
        return str(uuid.UUID(value)) if isinstance(value, str) else None
    except ValueError:
        return None


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    """False for a submission whose `?id=` and body `id` name two different jobs."""
    query_id = (case.query or {}).get("id")
    body_id = case.body.get("id") if isinstance(case.body, dict) else None
    if query_id is None or not isinstance(body_id, str):
        return True
    return _canonical(query_id) is None or _canonical(query_id) == _canonical(body_id)
