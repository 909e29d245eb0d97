"""Forking a job: a new job that keeps what its source did before a chosen step and runs the
rest again, with that step's input edited if asked.

A fork is a submission that carries a `ForkSeed` (`JobSubmitted.fork`): the source job's
recorded facts, gathered by the API from memory or the journal, so the journaled submission
replays without the source. The engine decides everything else here:

- the fork keeps the source's outputs of every main step that is neither the `from` step nor
  downstream of it and that completed, was skipped or recovered (a compensated step's effect
  was undone: it runs again), and runs the rest;
- the `from` step gets the edited input, else the input the source was given for it (the source
  was a fork too), else the input its dependencies' outputs make, as for any step;
- a task `from` step keeps each completed child of the source (with `children: failed`) whose
  payload is the same as the one the fork would send it, and starts the others.

Jobs that are not forks pay one attribute check per step start and per fan-out.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable
from typing import Any

from workflow_manager.config.models import Flow, Task, Workflow
from workflow_manager.engine import jsontext
from workflow_manager.engine.commands import JobForked
from workflow_manager.engine.events import ForkSeed
from workflow_manager.engine.extension import Work
from workflow_manager.engine.fanout import child_payload
from workflow_manager.engine.state import (
    ENDED_STATUSES,
    ForkedFrom,
    Job,
    StepRun,
    StepStatus,
)

__all__ = [
    "CHILDREN_MODES",
    "payload_digest",
    "source_problem",
    "fork_problem",
    "downstream_of",
    "seed_job",
    "given_input",
    "keep_children",
    "kept_children",
]

CHILDREN_MODES = ("failed", "all")
"""What a fork from a task step runs again: its failed (and unfinished) children, or all."""

# The statuses of a source step whose output a fork keeps. A compensated step was undone.
_KEPT = frozenset({StepStatus.COMPLETED, StepStatus.SKIPPED, StepStatus.RECOVERED})
_KEPT_NAMES = frozenset(str(status) for status in _KEPT)
_ENDED_NAMES = frozenset(str(status) for status in ENDED_STATUSES)


def payload_digest(payload: Any) -> str:
    """A digest of a JSON value that does not depend on key order: two child payloads with
    the same digest are the same."""
    text = jsontext.dumps_text(_sorted(payload))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def source_problem(seed: ForkSeed) -> str | None:
    """Why the job `seed` was taken from cannot be forked (it has not ended), or None."""
    if seed.status not in _ENDED_NAMES:
        return (
            f"job {seed.source} is {seed.status}; only a completed, failed or cancelled job "
            "can be forked"
        )
    return None


def fork_problem(workflow: Workflow, seed: ForkSeed) -> str | None:
    """Why `seed` cannot make a job of `workflow` (the definition the fork runs), or None."""
    if seed.step not in workflow.step_index:
        names = [step.name for step in workflow.steps]
        hint = difflib.get_close_matches(seed.step, names, n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        return (
            f"workflow '{workflow.name}' has no step '{seed.step}' to fork from "
            f"(steps: {', '.join(names)}){suggestion}"
        )
    if seed.children not in CHILDREN_MODES:
        return f"children must be one of {', '.join(CHILDREN_MODES)}, got {seed.children!r}"
    return None


def downstream_of(flow: Flow, step: str) -> set[str]:
    """The steps of `flow` that depend on `step`, directly or through others."""
    dependents: dict[str, list[str]] = {}
    for spec in flow.steps:
        for name in set(spec.depends):
            dependents.setdefault(name, []).append(spec.name)
    found: set[str] = set()
    todo = [step]
    while todo:
        for name in dependents.get(todo.pop(), ()):
            if name not in found:
                found.add(name)
                todo.append(name)
    return found


def seed_job(work: Work, job: Job, seed: ForkSeed) -> None:
    """Make the new job `job` a fork: keep the source's outputs of the steps before `seed.step`,
    before the job starts (its ready steps are those whose dependencies are all kept)."""
    again = downstream_of(job.flow, seed.step) | {seed.step}
    reused: list[str] = []
    for spec in job.flow.steps:  # in the flow's order, so compensations undo newest first
        saved = seed.steps.get(spec.name)
        if spec.name in again or saved is None or saved[0] not in _KEPT_NAMES:
            continue
        run = job.steps[spec.name]
        run.status, run.output = StepStatus(saved[0]), saved[1] or {}
        reused.append(spec.name)
    _recount(job, job.steps.values())
    if job.done_order is not None:
        job.done_order.extend(reused)
    children = None
    if seed.children == "failed" and seed.reused:
        children = {
            child.index: (child.job_id, child.digest, child.result) for child in seed.reused
        }
    given = seed.input if seed.input is not None else seed.recorded_input
    job.fork = ForkedFrom(seed.source, seed.step, given, tuple(reused), children)
    work.commands.append(
        JobForked(job.id, job.workflow.name, seed.source, seed.step, len(reused), work.at)
    )


def _recount(job: Job, runs: Iterable[StepRun]) -> None:
    """Each step's count of unfinished dependencies, and the job's of unfinished steps."""
    steps = job.steps
    for run in runs:
        run.waiting_on = sum(not steps[name].status.is_done for name in set(run.spec.depends))
    job.steps_left = sum(not run.status.is_done for run in steps.values())


def given_input(job: Job, run: StepRun) -> dict[str, Any] | None:
    """The input a fork was given for `run` (its `from` step), or None: derive it as usual."""
    fork = job.fork
    if fork is None or fork.step != run.name:
        return None
    return fork.input


def keep_children(
    job: Job, run: StepRun, task: Task, data: dict[str, Any], items: list[Any]
) -> int:
    """A fork's task `from` step fans out: take the source's completed children whose payload
    is unchanged in their element's place (`run.children`, `run.child_results`); the caller
    starts the others. Returns how many were kept."""
    fork = job.fork
    if fork is None or fork.step != run.name or not fork.children:
        return 0
    assert run.children is not None and run.child_results is not None
    kept: set[int] = set()
    for index, (child_id, digest, result) in fork.children.items():
        if index >= len(items):
            continue
        if payload_digest(child_payload(task, data, items[index])) != digest:
            continue
        run.children[index] = child_id
        run.child_results[index] = result
        kept.add(index)
    fork.kept, fork.children_reused = kept, len(kept)
    return len(kept)


def kept_children(job: Job, run: StepRun) -> set[int] | None:
    """The element indexes of a fork's task step whose children it kept (not to start)."""
    fork = job.fork
    if fork is None or fork.step != run.name:
        return None
    return fork.kept
