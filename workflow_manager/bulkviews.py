"""A bulk action as the API shows it (`GET /api/bulk/{id}`): from memory while the manager
holds it, else from its journal rows (a bulk that finished before a restart). Across several
managers, a bulk is the sum of its parts (`summed_view`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workflow_manager.engine import BulkRun
from workflow_manager.engine.bulk import MAX_ERRORS
from workflow_manager.journal import EventKind, EventRow
from workflow_manager.textline import iso_utc

__all__ = ["bulk_view", "bulk_view_of_rows", "summed_view"]


def bulk_view(run: BulkRun) -> dict[str, Any]:
    """Where a bulk under way (in memory) stands."""
    return _view(
        run.bulk_id, run.action, run.total, run.next, run.changed, run.refused, run.errors,
        run.at, None, run.filter, run.params,
    )  # fmt: skip


def bulk_view_of_rows(bulk_id: str, rows: Iterable[EventRow]) -> dict[str, Any] | None:
    """Where a bulk stands as its journal rows say (None when there are none)."""
    asked: EventRow | None = None
    done = changed = refused = 0
    errors: list[tuple[str, str]] = []
    finished_at = None
    for row in rows:
        if row.kind == EventKind.BULK:
            asked = row
        elif row.kind == EventKind.BULK_STEP:
            done = row.meta["done"]
            changed += row.meta["changed"]
            refused += row.meta["refused"]
            errors.extend((job, reason) for job, reason in row.meta.get("errors", ()))
            if row.meta.get("finished"):
                finished_at = row.at
    if asked is None:
        return None
    meta = asked.meta
    return _view(
        bulk_id, meta["action"], meta["total"], done, changed, refused, errors[:MAX_ERRORS],
        asked.at, finished_at, meta.get("filter"), meta.get("params"),
    )  # fmt: skip


def _view(
    bulk_id: str,
    action: str,
    total: int,
    done: int,
    changed: int,
    refused: int,
    errors: list[tuple[str, str]],
    at: float,
    finished_at: float | None,
    filter: dict[str, Any] | None,
    params: dict[str, Any] | None,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": bulk_id,
        "action": action,
        "status": "finished" if finished_at is not None else "running",
        "total": total,
        "done": done,
        "changed": changed,
        "refused": refused,
        "errors": [{"job": job, "reason": reason} for job, reason in errors],
        "filter": filter or {},
        "started_at": iso_utc(at),
    }
    if params:
        view["params"] = params
    if finished_at is not None:
        view["finished_at"] = iso_utc(finished_at)
    return view


def summed_view(bulk_id: str, parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where a bulk split into `parts` (each one's view, in partition order) stands: their
    counts summed, their errors in that order (the first MAX_ERRORS), running until every
    part is finished; None without parts."""
    if not parts:
        return None
    first = parts[0]
    view: dict[str, Any] = {
        "id": bulk_id,
        "action": first["action"],
        "status": "finished" if all(p["status"] == "finished" for p in parts) else "running",
        **{key: sum(p[key] for p in parts) for key in ("total", "done", "changed", "refused")},
        "errors": [error for p in parts for error in p["errors"]][:MAX_ERRORS],
        "filter": first["filter"],
        "started_at": min(p["started_at"] for p in parts),  # ISO UTC: ordered as text
    }
    if "params" in first:
        view["params"] = first["params"]
    if view["status"] == "finished":
        view["finished_at"] = max(p["finished_at"] for p in parts)
    return view
