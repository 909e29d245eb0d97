"""Join policies of task steps (`join:`, `workflow_manager.config.joins`). Pure.

A step with `min_success` or `first` completes as soon as enough children succeeded, and
fails at once when too many failed for that to happen; the children still running are then
cancelled (or, with `then: finish`, left to run until their job ends). Everything is decided
from what the step holds already (children settled, failed, left), so replaying the same
events decides the same way and nothing more is kept or journaled.

The part `Joins` decides at the core's points for a task step's children
(`workflow_manager.engine.children`): when a fork's join step fans out and each time one of
its children counts (`children_decided`), whether a failed child is counted rather than fatal
(`tolerates_failed_child`), and a `then: finish` child that ends after its step did
(`child_outlived`). It also refuses a list too short for the join, and cancels `then: finish`
leftovers when their job completes.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.joins import Join
from workflow_manager.config.models import Task, Workflow
from workflow_manager.engine import reducing
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.fanout import gather
from workflow_manager.engine.forking import kept_children
from workflow_manager.engine.state import Job, JobStatus, StepRun

__all__ = ["Joins", "decided", "join_of", "joined_output", "tolerates_failures"]


def join_of(run: StepRun) -> Join | None:
    """The step's join when it may complete early (min_success, first); None for `all`."""
    join = run.spec.join
    return join if join is not None and join.policy != "all" else None


def tolerates_failures(run: StepRun) -> bool:
    """True for `min_success`: a failed child is counted, not fatal, while the join can be met."""
    join = run.spec.join
    return join is not None and join.policy == "min_success"


def decided(work: Work, job: Job, run: StepRun, task: Task) -> bool:
    """Complete the step if its join is met, or fail it if the join can no longer be met;
    True when it did either. O(1), except for a fork's kept children."""
    join = join_of(run)
    assert join is not None and run.children is not None  # a join step that fanned out
    total = len(run.children)
    failed = len(run.failed_items or ())
    # A fork's kept children count as succeeded before the start loop passes them.
    ahead = _kept_ahead(job, run)
    succeeded = total - run.children_left - failed + ahead
    open_ = run.children_left - ahead  # children that may still succeed
    needed = join.needed(total)
    if succeeded >= needed:
        _met(work, job, run, task, join, needed)
        return True
    if succeeded + open_ < needed:
        _unreachable(work, job, run, join, (needed, succeeded, failed, open_))
        return True
    return False


def _kept_ahead(job: Job, run: StepRun) -> int:
    if job.fork is None:
        return 0
    kept = kept_children(job, run)
    return sum(index >= run.next_child for index in kept) if kept else 0


def _met(work: Work, job: Job, run: StepRun, task: Task, join: Join, needed: int) -> None:
    """Enough children succeeded: the others are cancelled (or left to run), the step
    completes with what was gathered."""
    if join.then == "cancel":
        why = f"task step '{run.name}' of job {job.id} met its join ({join.text}) without it"
        _cancel_running(work, run, why)
    if run.reduction is not None:
        reducing.close(work, job, run)  # the step completes once what is gathered is reduced
        return
    output = joined_output(task, run, needed)
    run.child_results = None
    work.complete_step(job, run, output)


def _unreachable(
    work: Work, job: Job, run: StepRun, join: Join, counts: tuple[int, int, int, int]
) -> None:
    """Too many children failed for the join: the others are cancelled, the step fails."""
    needed, succeeded, failed, open_ = counts
    assert run.children is not None
    _cancel_running(work, run, f"task step '{run.name}' of job {job.id} failed its join")
    message = (
        f"task step '{run.name}': join {join.text} needs {needed} of {len(run.children)} "
        f"children to succeed, but {failed} failed ({succeeded} succeeded, {open_} left), "
        f"so at most {succeeded + open_} can"
    )
    if run.failed_items:
        last = run.failed_items[-1]
        error = last.get("error") or {}
        message += (
            f"; last failure: child job {last['id']} (element {last['index']}) failed at step "
            f"'{error.get('step')}': {error.get('message')}"
        )
    work.fail_step(job, run, message)


def _cancel_running(work: Work, run: StepRun, why: str) -> None:
    """Cancel the step's started children that still run (the others never start)."""
    assert run.children is not None
    for child_id in run.children[: run.next_child]:
        child = work.state.jobs.get(child_id)
        if child is not None and child.is_running:
            work.cancel_job(child, why, False)


def joined_output(task: Task, run: StepRun, needed: int) -> dict[str, Any]:
    """A join step's output: as under `all` (results in element order, null where a child did
    not succeed; `failed_items`), plus `join`: needed, and which elements succeeded, failed,
    or had not finished when the step completed."""
    assert run.child_results is not None
    results = run.child_results
    output = gather(task, results)
    failed = sorted(run.failed_items or (), key=lambda f: f["index"])
    if failed:
        output["failed_items"] = failed
    failed_at = [f["index"] for f in failed]
    ended = set(failed_at)
    output["join"] = {
        "needed": needed,
        "succeeded": [i for i, result in enumerate(results) if result is not None],
        "failed": failed_at,
        "unfinished": [i for i, result in enumerate(results) if result is None and i not in ended],
    }
    return output


class Joins(Part):
    """Join policies: a list shorter than the join needs fails its step; the children so far
    complete it, or fail it, before all of them end; a job that completes cancels the
    `then: finish` children it left running (a job's children never outlive it)."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a `min_success` or `first` join."""
        return any(
            step.join is not None and step.join.policy != "all" for step in every_step(workflow)
        )

    def children_refused(
        self, work: Work, job: Job, run: StepRun, task: Task, data: dict[str, Any], items: list[Any]
    ) -> bool:
        """Fail the step when its list has fewer elements than the join needs to succeed."""
        join = join_of(run)
        if join is None or join.needed(len(items)) <= len(items):
            return False
        needed = join.needed(len(items))
        work.fail_step(
            job,
            run,
            f"task step '{run.name}': join {join.text} needs {needed} children to succeed, but "
            f"the list at '{task.item_list_key}' has {len(items)} element(s); pass a longer "
            "list, or give min_success as a percentage",
        )
        return True

    def child_outlived(self, work: Work, parent: Job, run: StepRun, child: Job) -> None:
        """A `then: finish` child, ending after its step met its join: noted, not gathered."""
        if run.status.is_done and join_of(run) is not None:
            why = f"task step '{run.name}' of job {parent.id} is {run.status} already"
            work.ignore(child.id, f"{why}; this child's result is not gathered")

    def tolerates_failed_child(self, work: Work, parent: Job, run: StepRun, child: Job) -> bool:
        """`min_success`: a failed child is counted, not fatal, while the join can be met
        (`children_decided` fails the step once it cannot)."""
        return tolerates_failures(run)

    def children_decided(self, work: Work, job: Job, run: StepRun, task: Task) -> bool:
        """Complete the step once its join is met, or fail it once it cannot be."""
        return join_of(run) is not None and decided(work, job, run, task)

    def job_stopped(self, work: Work, job: Job) -> None:
        """A completed job cancels the children its `then: finish` steps left running (a failed
        or cancelled job cancels every running child itself)."""
        if job.status is not JobStatus.COMPLETED:
            return
        for run in job.steps.values():
            join = join_of(run)
            if join is not None and join.then == "finish" and run.children:
                why = f"job {job.id} completed; child of task step '{run.name}' left running"
                _cancel_running(work, run, why)
