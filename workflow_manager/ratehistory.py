"""What recovery feeds rate limits: the step requests the journal holds within their windows.

A rate's window must outlive a restart, and replay brings back running jobs only: a job that
ended a moment before the restart took a start too. Its `dispatched` row says when, for which
step, with which input and metadata (what a keyed window reads), so the engine counts it
again (`RateHistory`); a start it shares with a replayed dispatch counts once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Any

from workflow_manager.config import Workflow
from workflow_manager.engine import RateHistory, RateStart, jsontext
from workflow_manager.engine.rates import rated_steps
from workflow_manager.journal import EventRow, Journal
from workflow_manager.transport.naming import HEADER_META, HEADER_WORKFLOW

__all__ = ["rate_history", "rate_start"]


Select = Callable[[Collection[str]], Awaitable[list[str]]]
"""Of some top-level job ids, those whose starts count here (a manager's partitions)."""


async def rate_history(
    journal: Journal, workflows: Iterable[Workflow], now: float, select: Select | None = None
) -> RateHistory:
    """The requests of rate-limited steps sent within the longest of their windows at `now`
    (with `select`, only those of the job trees it keeps: rates hold per manager)."""
    steps, longest = rated_steps(workflows)
    if not steps:
        return RateHistory((), now)
    rows = await journal.dispatched_since(steps, now - longest)
    if select is not None and rows:
        kept = set(await select({row.root_id for row in rows if row.root_id is not None}))
        rows = [row for row in rows if row.root_id in kept]
    starts = (rate_start(row) for row in rows)
    return RateHistory(tuple(start for start in starts if start is not None), now)


def rate_start(row: EventRow) -> RateStart | None:
    """A `dispatched` row as a start, or None when it lacks what a window needs."""
    headers = row.meta.get("headers") or {}
    workflow = headers.get(HEADER_WORKFLOW)
    queue = row.meta.get("queue")
    if not (isinstance(workflow, str) and isinstance(queue, str)):
        return None
    if row.job_id is None or row.step is None or row.attempt is None:
        return None
    return RateStart(
        workflow, row.step, queue, row.job_id, row.attempt, _object(row.body),
        _meta(headers.get(HEADER_META)), row.at,
    )  # fmt: skip


def _object(body: bytes | None) -> dict[str, Any]:
    try:
        value = jsontext.loads(body) if body else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _meta(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
