"""Reads of ended jobs whose rules outlive them: a leading debounce window stays open for its
period after its job ended, and replay brings back running jobs only. A function of the read
connection; the caller translates errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflow_manager.engine import jsontext
from workflow_manager.journal.bulkreads import ENDED
from workflow_manager.journal.queries import Reads

__all__ = ["EndedRecently", "ended_since"]


@dataclass(frozen=True, slots=True)
class EndedRecently:
    """An ended top-level job submitted lately: what its rules read again (payload, metadata)."""

    id: str
    workflow: str
    submitted_at: float
    payload: dict[str, Any]
    meta: dict[str, Any] | None


async def ended_since(conn: Reads, workflow: str, since: float) -> list[EndedRecently]:
    """The ended top-level jobs of `workflow` submitted at or after `since`, oldest first (the
    jobs_workflow index: workflow, submitted_at)."""
    rows = await conn.execute_fetchall(
        "SELECT id, submitted_at, payload, snapshot FROM jobs"
        " WHERE parent_id IS NULL AND workflow = ? AND submitted_at >= ?"
        f" AND status IN ({', '.join('?' * len(ENDED))}) ORDER BY submitted_at, id",
        (workflow, since, *ENDED),
    )
    found = []
    for id_, submitted_at, payload, snapshot in rows:
        meta = jsontext.loads(snapshot).get("meta") if snapshot else None
        found.append(
            EndedRecently(
                id_,
                workflow,
                submitted_at,
                jsontext.loads(payload),
                meta if isinstance(meta, dict) else None,
            )  # fmt: skip
        )
    return found
