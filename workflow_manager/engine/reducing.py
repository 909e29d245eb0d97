"""Reducing a task step's children as they finish (`reduce:`, `workflow_manager.config.reduce`).

Pure. A task step with `reduce` keeps no per-child result: each finished child's result joins
the step's pending batch (`StepRun.reduction`, in completion order). When `batch` results wait
and no reduction is in flight, one request goes to the reducer step with
`{"accumulator": ..., "results": [...]}`; its reply (a JSON object) is the new accumulator.
One reduction at a time, so each sees the one before; while two batches wait, no more
children start (a slow reducer slows the fan-out down rather than filling memory). Once every
child is in (or the step's join is met), what is left is sent as a last, shorter batch, and
the step completes with the accumulator as its output (plus `failed_items` when some children
failed and were tolerated).

The reducer runs as a step of the job, like a fallback (`StepRun.reduces`): its requests,
replies, reply deadline and retries are a step's, each batch with the whole retry budget (a
new round). Its attempt numbers go on across batches, so a late copy of an earlier batch's
reply (attempt at most the batch's round start) is told apart and ignored. Everything is
decided from the journaled events (children's replies, the reducer's replies, timers), so a
replay rebuilds the same accumulator, pending batch and batch in flight: no batch is lost or
reduced twice.

The part `Reducers` takes part at the core's points for a task step's children
(`workflow_manager.engine.children`): it claims a reduce step's results when it fans out
(`start`), keeps each in the pending batch (`add`), sends batches as children count
(`go_on`), reduces the last once every child is in (`close`, also called by
`workflow_manager.engine.joins` when the join is met), and drops a child that ends after
that; it also takes the reducer's replies and failures.
"""

from __future__ import annotations

from typing import Any

from workflow_manager.config.models import Task, Workflow
from workflow_manager.engine.events import StepReplied
from workflow_manager.engine.extension import Part, Work, every_step
from workflow_manager.engine.state import Job, JobStatus, Reduction, StepRun, StepStatus

__all__ = ["Reducers", "add", "advance", "close", "go_on", "start"]


def start(run: StepRun) -> None:
    """A task step with `reduce` fans out: its reduction begins with the `initial` accumulator."""
    reduce = run.spec.reduce
    assert reduce is not None  # called for reduce steps only
    run.reduction = Reduction(accumulator=dict(reduce.initial))


def add(run: StepRun, result: dict[str, Any] | None) -> None:
    """A child of the step completed: its result waits in the pending batch."""
    assert run.reduction is not None
    run.reduction.pending.append(result)


def go_on(work: Work, job: Job, run: StepRun) -> None:
    """A child finished or a batch was reduced: send the next batch if one is due, and start
    more children while fewer than two batches of results wait (a reducer slower than the
    children slows the fan-out down instead of filling memory)."""
    advance(work, job, run)
    reduction, reduce = run.reduction, run.spec.reduce
    if run.status is not StepStatus.RUNNING or reduction is None or reduction.closed:
        return
    assert reduce is not None
    if len(reduction.pending) < 2 * reduce.batch:
        work.start_children(job, run, job.workflow.task_by_name[run.spec.task or ""])


def advance(work: Work, job: Job, run: StepRun) -> None:
    """Send the next batch if one is full (or, once closed, whatever is left) and none is in
    flight; complete the step once closed with nothing left to reduce."""
    reduction = run.reduction
    reduce = run.spec.reduce
    assert reduction is not None and reduce is not None
    if reduction.sending or run.status is not StepStatus.RUNNING:
        return
    if len(reduction.pending) >= reduce.batch or (reduction.closed and reduction.pending):
        _send(work, job, run, reduction, reduce.batch)
    elif reduction.closed:
        output = dict(reduction.accumulator)
        if run.failed_items:
            output["failed_items"] = sorted(run.failed_items, key=lambda f: f["index"])
        work.complete_step(job, run, output)  # its StepFinished tells the reduction's totals
        run.reduction = None


def close(work: Work, job: Job, run: StepRun) -> None:
    """Every child is in, or the join is met: no more results; reduce what is left, then end."""
    assert run.reduction is not None
    run.reduction.closed = True
    advance(work, job, run)


def _send(work: Work, job: Job, run: StepRun, reduction: Reduction, size: int) -> None:
    """Dispatch one batch, the oldest pending results, to the reducer."""
    spec = run.spec.reduce_step
    assert spec is not None
    reducer = job.steps.get(spec.name)
    if reducer is None or reducer.reduces != run.name:
        reducer = job.steps[spec.name] = StepRun(spec=spec, waiting_on=0, reduces=run.name)
    batch = reduction.pending[:size]
    del reduction.pending[:size]
    reduction.sending = len(batch)
    # A new round per batch: the whole retry budget, and replies of earlier batches (attempt
    # numbers up to here) are told apart from this one's.
    reducer.round_start = reducer.attempt
    reducer.input = {"accumulator": reduction.accumulator, "results": batch}
    reducer.output = reducer.error = reducer.finished_at = None
    reducer.started_at = work.at
    work.dispatch(job, reducer)


def _task_run(job: Job, reducer: StepRun) -> StepRun | None:
    """The task step a reducer's run reduces for, while it still reduces."""
    run = job.steps.get(reducer.reduces or "")
    if run is None or run.reduction is None or run.status is not StepStatus.RUNNING:
        return None
    return run


class Reducers(Part):
    """A reduce step's children's results go to the reducer in batches; the reducer's replies:
    a good one is the new accumulator (the next batch goes); a failure, once its retries are
    spent, fails the task step."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with a task step that has `reduce`."""
        return any(step.reduce is not None for step in every_step(workflow))

    def claims_results(self, work: Work, job: Job, run: StepRun) -> bool:
        """A reduce step fans out: its results are reduced as they come, not kept per child."""
        if run.spec.reduce is None:
            return False
        start(run)
        return True

    def late_child_held(self, work: Work, parent: Job, run: StepRun, child: Job) -> bool:
        """A `then: finish` child, ending after its reduce step met its join: not reduced."""
        if run.reduction is None or not run.reduction.closed:
            return False
        why = f"task step '{run.name}' of job {parent.id} met its join already"
        work.ignore(child.id, f"{why}; this child's result is not reduced")
        return True

    def result_held(self, work: Work, parent: Job, run: StepRun, child: Job) -> bool:
        """A completed child's result joins the pending batch (a tolerated failure gives none)."""
        if run.reduction is None:
            return False
        if child.status is JobStatus.COMPLETED:
            add(run, child.result)
        return True

    def next_children_held(self, work: Work, job: Job, run: StepRun, task: Task) -> bool:
        """A full batch goes to the reducer first; more children start while few results wait."""
        if run.reduction is None:
            return False
        go_on(work, job, run)
        return True

    def gathered_held(self, work: Work, job: Job, run: StepRun) -> bool:
        """Every child is in: the last batch is reduced, and the accumulator is the output."""
        if run.reduction is None:
            return False
        close(work, job, run)
        return True

    def claims_reply(self, work: Work, event: StepReplied) -> bool:
        """Ignore a late reply to an earlier batch (its attempt is before this batch's round):
        it would otherwise complete the batch in flight with the wrong accumulator."""
        job = work.state.jobs.get(event.job_id)
        if job is None or event.attempt is None:
            return False
        run = job.steps.get(event.step)
        if run is None or run.reduces is None or event.attempt > run.round_start:
            return False
        work.concerns(job)
        work.ignore(
            event.correlation_id,
            f"reply for attempt {event.attempt}, of an earlier batch of reducer '{run.name}' "
            f"(this batch's attempts start at {run.round_start + 1})",
        )
        return True

    def completion_held(self, work: Work, job: Job, run: StepRun, output: dict[str, Any]) -> bool:
        """A reducer's reply: the new accumulator; the next batch goes, or the step ends."""
        if run.reduces is None:
            return False
        run.status = StepStatus.COMPLETED
        run.finished_at = work.at
        run.input = None  # the batch is reduced: its results leave memory
        work.step_finished(job, run, "completed", None, None)
        task_run = _task_run(job, run)
        if task_run is None:
            return True
        reduction = task_run.reduction
        assert reduction is not None
        reduction.accumulator = output
        reduction.reduced += reduction.sending
        reduction.sending = 0
        go_on(work, job, task_run)  # and the children held back while results waited
        return True

    def failure_held(self, work: Work, job: Job, run: StepRun, message: str, reason: str) -> bool:
        """A reducer failed for good: so does its task step (its children are cancelled)."""
        if run.reduces is None:
            return False
        run.status = StepStatus.FAILED
        run.error = message
        run.finished_at = work.at
        work.step_finished(job, run, "failed", reason, message)
        task_run = _task_run(job, run)
        if task_run is not None:
            reduction = task_run.reduction
            assert reduction is not None
            work.fail_step(
                job,
                task_run,
                f"task step '{task_run.name}': reducer '{run.name}' failed on a batch of "
                f"{reduction.sending} result(s), after {reduction.reduced} reduced "
                f"(attempt {run.attempt}): {message}",
            )
        return True

    def retry_refusal(self, work: Work, job: Job) -> str | None:
        """A job whose reduce step did not complete may not be retried: what its reduced
        children gave is only in the accumulator, and a retry cannot tell which to run again."""
        for run in job.steps.values():
            if run.spec.reduce is not None and run.children is not None:
                if run.status is not StepStatus.COMPLETED:
                    return (
                        f"job {job.id}: task step '{run.name}' reduces its children as they "
                        "finish and did not complete; a retry cannot tell which children to "
                        "run again: submit a new job instead"
                    )
        return None
