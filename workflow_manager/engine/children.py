"""A task step's children: fanning out over its items, starting them as there is room, and
gathering their results as each settles (O(1) per child).

Functions of the event's work (`workflow_manager.engine.extension.Work`); parts take part at
`children_refused` (contracts, joins), `child_settled` (compensation), and at the points where
a join policy decides a step before all its children end (`children_decided`,
`tolerates_failed_child`, `child_outlived`: joins) or a reducer gathers their results instead
(`claims_results`, `result_held`, `next_children_held`, `gathered_held`, `late_child_held`:
reduce).
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Task
from workflow_manager.engine.extension import Parts, Work
from workflow_manager.engine.fanout import (
    FanOutError,
    child_ids,
    child_payload,
    copies_problem,
    gather,
    item_list,
)
from workflow_manager.engine.forking import keep_children, kept_children
from workflow_manager.engine.jobs import create_job
from workflow_manager.engine.snapshot import root_of
from workflow_manager.engine.state import Job, JobStatus, ParentLink, StepRun, StepStatus
from workflow_manager.engine.traceids import step_span_id

__all__ = ["child_finished", "fan_out", "start_children"]


def fan_out(work: Work, job: Job, run: StepRun, data: dict[str, Any]) -> None:
    """A task step starts: one child job per item of its input, or it fails with why not."""
    task = job.workflow.task_by_name[run.spec.task or ""]
    try:
        items = item_list(task, run.name, data)
        at_once = [""] * min(len(items), task.max_in_flight)  # the ids of those started at once
        ids = child_ids(job.id, run.name, items, work.state.jobs, at_once)
    except FanOutError as exc:
        work.fail_step(job, run, str(exc))
        return
    # Decided before any child starts, from the input alone: replay decides it the same way.
    limit = work.state.max_fanout_bytes
    if (problem := copies_problem(task, run.name, data, len(items), limit)) is not None:
        work.fail_step(job, run, problem)
        return
    parts = work.parts.of(job.workflow)
    for part in parts.children_refused:
        if part.children_refused(work, job, run, task, data, items):
            return
    run.children = ids
    if not items:
        reduce = run.spec.reduce
        work.complete_step(job, run, dict(reduce.initial) if reduce is not None else dict(data))
        return
    # A reduce step's results are reduced as they come, not kept per child.
    claimed = any(part.claims_results(work, job, run) for part in parts.claims_results)
    if not claimed:
        run.child_results = [None] * len(ids)
    run.children_left = len(ids)
    run.next_child = 0
    # A fork's reduce step runs every child again: the source's results are in no batch.
    if job.fork is not None and not claimed:
        keep_children(job, run, task, data, items)
        # A fork may have kept enough of its source's children for the join already.
        for part in parts.children_decided:
            if part.children_decided(work, job, run, task):
                return
    start_children(work, job, run, task, at_once)


def start_children(
    work: Work, job: Job, run: StepRun, task: Task, at_once: list[str] | None = None
) -> None:
    """Start children in element order until `max_in_flight` of them run (or none is left);
    `at_once`: the ids of the first elements, when the fan-out has just made them."""
    assert run.children is not None and run.input is not None  # set when the step fanned out
    items = run.input[task.item_list_key]
    running = run.next_child - (len(run.children) - run.children_left)
    trace: tuple[str, str | None] | None = None  # hashed once, and only if a child starts
    # A fork's task step: the children it kept from its source are done, not started.
    kept = kept_children(job, run) if job.fork is not None else None
    while run.next_child < len(run.children) and running < task.max_in_flight:
        index = run.next_child
        if kept and index in kept:
            run.next_child += 1
            run.children_left -= 1
            continue
        child_id = at_once[index] if at_once and index < len(at_once) else run.children[index]
        if child_id in work.state.jobs:
            message = f"task step '{run.name}': element {index} has id {child_id}, already a job"
            work.fail_step(job, run, message)
            return
        payload = child_payload(task, run.input, items[index])
        if trace is None:
            # In their parent's trace; their spans hang from the task step's span.
            trace = (job.trace_id, step_span_id(job.id, run.name, run.attempt))
        link = ParentLink(job.id, run.name, index)
        create_job(work, job.workflow, task, child_id, payload, link, trace)
        run.next_child += 1
        running += 1
    if kept and run.children_left == 0:  # every child left was one it kept
        _gathered(work, work.parts.of(job.workflow), job, run, task)


def child_finished(work: Work, child: Job) -> None:
    """A child job settled: O(1) bookkeeping on its parent's task step."""
    assert child.parent is not None  # only children are reported to a parent
    link = child.parent
    parent = work.state.jobs[link.job_id]
    run = parent.steps[link.step]
    parts = work.parts.of(parent.workflow)
    # An on_error/on_cancel task step gathers its children after the job itself has ended.
    if not parent.is_live(run.name) or run.status is not StepStatus.RUNNING:
        for part in parts.child_outlived:
            part.child_outlived(work, parent, run, child)
        return
    for part in parts.late_child_held:
        if part.late_child_held(work, parent, run, child):
            return
    for part in parts.child_settled:
        part.child_settled(work, parent, run, child)
    if child.status is JobStatus.FAILED and not _tolerate(work, parts, parent, run, child):
        error = child.error or {}
        message = (
            f"child job {child.id} (element {link.index}) failed at step "
            f"'{error.get('step')}': {error.get('message')}"
        )
        work.fail_step(parent, run, message)
        return
    _count(work, parts, parent, run, child)
    task = parent.workflow.task_by_name[run.spec.task or ""]
    for part in parts.children_decided:
        if part.children_decided(work, parent, run, task):
            return
    if run.children_left == 0:
        _gathered(work, parts, parent, run, task)
        return
    for part in parts.next_children_held:  # reduce: a full batch first, children as allowed
        if part.next_children_held(work, parent, run, task):
            return
    start_children(work, parent, run, task)


def _count(work: Work, parts: Parts, parent: Job, run: StepRun, child: Job) -> None:
    """Count a settled child: its result is kept in its element's place (or by a part: reduce's
    pending batch), and a completed child leaves memory."""
    for part in parts.result_held:
        if part.result_held(work, parent, run, child):
            break
    else:
        assert child.parent is not None and run.child_results is not None  # set when fanned out
        run.child_results[child.parent.index] = child.result
    run.children_left -= 1
    if child.status is JobStatus.COMPLETED:
        # Its result is all the parent needs; its JobFinished carries its final snapshot.
        del work.state.jobs[child.id]
        root = root_of(work.state, parent)
        work.state.gone.add(child.id, root)


def _gathered(work: Work, parts: Parts, job: Job, run: StepRun, task: Task) -> None:
    """Every child of a task step has settled: its output gathers their results (or, with
    `reduce`, the last batch is reduced and the accumulator is its output)."""
    for part in parts.gathered_held:
        if part.gathered_held(work, job, run):
            return
    assert run.child_results is not None
    output = gather(task, run.child_results)
    if run.failed_items:
        output["failed_items"] = sorted(run.failed_items, key=lambda f: f["index"])
    run.child_results = None
    work.complete_step(job, run, output)


def _tolerate(work: Work, parts: Parts, parent: Job, run: StepRun, child: Job) -> bool:
    """Accept a failed child when the task allows more failures (max_failed_items), or a part
    does (a `min_success` join, which fails the step itself once it cannot be met)."""
    task = parent.workflow.task_by_name[run.spec.task or ""]
    failed = run.failed_items if run.failed_items is not None else []
    if len(failed) >= task.max_failed_items and not any(
        part.tolerates_failed_child(work, parent, run, child)
        for part in parts.tolerates_failed_child
    ):
        return False
    assert child.parent is not None
    failed.append({"index": child.parent.index, "id": child.id, "error": child.error})
    run.failed_items = failed
    return True
