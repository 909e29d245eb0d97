"""Job ids: every id the manager accepts is a UUID, kept in one canonical spelling. Pure."""

from __future__ import annotations

import uuid
from typing import Any

__all__ = ["canonical_uuid"]


def canonical_uuid(value: Any) -> str | None:
    """`value` as a lower-case hyphenated UUID, or None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None
