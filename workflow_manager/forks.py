"""A fork's submission: the source job's recorded facts, read from memory or the journal, as
the seed the engine forks from (`workflow_manager.engine.forking` decides the rest)."""

from __future__ import annotations

from typing import Any

from workflow_manager.engine import ForkSeed, Job, JobSubmitted, ReusedChild
from workflow_manager.engine.forking import payload_digest
from workflow_manager.journal import Journal
from workflow_manager.traces import new_trace_id

__all__ = ["fork_submission", "fork_seed_of"]


async def fork_submission(
    journal: Journal,
    source: Job,
    step: str,
    at: float,
    *,
    job_id: str,
    input: dict[str, Any] | None = None,
    definition: str = "current",
    children: str = "failed",
) -> JobSubmitted:
    """The submission of job `job_id`, a fork of `source` from `step`: `definition` "pinned"
    runs the source's definition, "current" the workflow's current one."""
    seed = await fork_seed_of(journal, source, step, input, children)
    pinned = source.workflow.content_hash if definition == "pinned" else None
    return JobSubmitted(
        job_id, source.workflow.name, source.payload, at, definition=pinned,
        trace_id=new_trace_id(), priority=source.priority, meta=source.meta, fork=seed,
    )  # fmt: skip


async def fork_seed_of(
    journal: Journal, source: Job, step: str, input: dict[str, Any] | None, children: str
) -> ForkSeed:
    """What a fork may keep of `source`: its finished main steps' outputs and, for a task
    step with `children` "failed", its completed children (from the journal). The status is
    the source's as shown: the engine refuses to fork a job that has not ended."""
    steps = {
        name: (str(run.status), run.output)
        for name, run in source.steps.items()
        if name in source.flow.step_index and run.status.is_done
    }
    fork = source.fork
    recorded = fork.input if fork is not None and fork.step == step else None
    run = source.steps.get(step)
    reused: list[ReusedChild] = []
    if children == "failed" and run is not None and run.children:
        outcomes = await journal.job_outcomes(run.children)
        for index, child_id in enumerate(run.children):
            outcome = outcomes.get(child_id)
            if outcome is not None and outcome[0] == "completed":
                digest = payload_digest(outcome[1])
                reused.append(ReusedChild(index, child_id, digest, outcome[2]))
    status = str(source.status)
    if source.status.value in ("completed", "failed", "cancelled") and not source.is_settled:
        status += " (its on_error / on_cancel steps still run)"  # not ended yet, for the engine
    return ForkSeed(source.id, step, status, steps, input, recorded, children, tuple(reused))
