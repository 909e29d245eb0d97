"""What recovery feeds rate limits: the step requests the journal holds within their windows,
and the top-level jobs started within their workflows' `rate` windows.

A rate's window must outlive a restart, and replay brings back running jobs only: a job that
ended a moment before the restart took a start too. Its `dispatched` row says when, for which
step, with which input and metadata (what a keyed window reads), so the engine counts it
again (`RateHistory`); a start it shares with a replayed dispatch counts once. Likewise a job's
first `started` row says when it started, and its `submitted` row of which workflow, with
which payload and metadata (what a workflow's keyed window reads).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any

from workflow_manager.config import Workflow
from workflow_manager.engine import JobRateStart, RateHistory, RateStart, jsontext
from workflow_manager.engine.jobrates import rated_workflows
from workflow_manager.engine.rates import rated_steps
from workflow_manager.journal import EventRow, Journal
from workflow_manager.transport.naming import HEADER_META, HEADER_WORKFLOW

__all__ = ["job_rate_start", "rate_history", "rate_start"]


Select = Callable[[Collection[str]], Awaitable[Mapping[str, int]]]
"""Of some top-level job ids, those whose starts count here (a manager's partitions), with the
partition of each (their windows are the partition's)."""


async def rate_history(
    journal: Journal, workflows: Iterable[Workflow], now: float, select: Select | None = None
) -> RateHistory:
    """The requests of rate-limited steps sent within the longest of their windows at `now`,
    and the first starts of top-level jobs of workflows with a `rate` within the longest of
    theirs (with `select`, only those of the job trees it keeps: rates hold per manager)."""
    workflows = tuple(workflows)
    steps, longest = rated_steps(workflows)
    rows = await journal.dispatched_since(steps, now - longest) if steps else []
    names, job_longest = rated_workflows(workflows)
    started = await journal.job_starts_since(now - job_longest) if names else []
    started = [(at, row) for at, row in started if row.meta.get("workflow") in names]
    partitions: Mapping[str, int] = {}
    if select is not None and (rows or started):
        roots = {row.root_id for row in rows if row.root_id is not None}
        roots |= {row.job_id for _, row in started if row.job_id is not None}
        partitions = await select(roots)
        rows = [row for row in rows if row.root_id in partitions]
        started = [(at, row) for at, row in started if row.job_id in partitions]
    starts = (rate_start(row, partitions.get(row.root_id or "")) for row in rows)
    jobs = (job_rate_start(at, row, partitions.get(row.job_id or "")) for at, row in started)
    return RateHistory(
        tuple(start for start in starts if start is not None),
        now,
        tuple(job for job in jobs if job is not None),
    )


def job_rate_start(at: float, row: EventRow, partition: int | None = None) -> JobRateStart | None:
    """A top-level job's first start at `at`, read with its `submitted` row (of a job tree in
    `partition`, when partitioned), or None when the row lacks what a window needs."""
    workflow = row.meta.get("workflow")
    if not isinstance(workflow, str) or row.job_id is None:
        return None
    meta = row.meta.get("meta")
    return JobRateStart(
        workflow, row.job_id, _object(row.body), meta if isinstance(meta, dict) else None, at,
        partition,
    )  # fmt: skip


def rate_start(row: EventRow, partition: int | None = None) -> RateStart | None:
    """A `dispatched` row as a start (of a job tree in `partition`, when partitioned), or None
    when it lacks what a window needs."""
    headers = row.meta.get("headers") or {}
    workflow = headers.get(HEADER_WORKFLOW)
    queue = row.meta.get("queue")
    if not (isinstance(workflow, str) and isinstance(queue, str)):
        return None
    if row.job_id is None or row.step is None or row.attempt is None:
        return None
    return RateStart(
        workflow, row.step, queue, row.job_id, row.attempt, _object(row.body),
        _meta(headers.get(HEADER_META)), row.at, partition,
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
