"""Debounced triggers: a workflow with `debounce: {key, period, mode}` makes one job of the
triggers with the same key within `period` seconds of the first.

A part (`workflow_manager.engine.extension.Part`). The key is the workflow's JMESPath
expression over the payload (and `meta.<field>`), as canonical JSON, like `unique.key`'s. A
window is fixed: it opens with the first trigger of a key and closes `period` seconds later,
however many triggers follow, so a steady stream cannot put the job off for ever. In `leading`
mode the first trigger's job starts at once; in `trailing` mode it is scheduled (a delayed
start: `workflow_manager.engine.delays`) for the window's end, and each later trigger in the
window gives it its payload and metadata (the last one wins). Every other trigger is answered
`debounced` (`JobDebounced`) and journaled under the window's job, so replaying that job's rows
rebuilds its window and its last payload.

Windows are kept per workflow, oldest first (`EngineState.debounce`). One leaves memory when
its trailing job starts, when its job is cancelled before it started, or, once closed, at the
next trigger or settled job of its workflow (a sweep from the oldest, O(1) per window).

A leading window can outlive its job. Recovery replays running jobs only, so the windows of
jobs that ended are recalled from the journal's job rows (`JobsRecalled`, `recall_windows`)
before the replay: a restart or a take-over inside such a window still answers `debounced`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workflow_manager.config.expressions import ExpressionError
from workflow_manager.config.models import Workflow
from workflow_manager.engine.commands import Command, JobDebounced, JobRejected
from workflow_manager.engine.events import JobsRecalled
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.metadata import key_data, key_json
from workflow_manager.engine.state import DebounceWindow, EngineState, Job, JobStatus

__all__ = ["Debouncing", "debounce_key", "recall_windows", "window_workflows"]


def debounce_key(workflow: Workflow, data: dict[str, Any]) -> str:
    """The debounce key text of a payload (with its `meta`): its value as canonical JSON.
    ExpressionError if it has none."""
    assert workflow.debounce is not None  # only asked of workflows with `debounce`
    value = workflow.debounce.expression.search(data)
    return key_json(value)


class Debouncing(Part):
    """Answering triggers of an open window `debounced`; opening, holding and closing windows."""

    def used_by(self, workflow: Workflow) -> bool:
        """Only workflows with `debounce`."""
        return workflow.debounce is not None

    def submission_refused(self, work: Work, sub: Submission) -> bool:
        """True after answering a trigger of an open window, or refusing one whose key cannot
        be read; else the key of the window the new job opens is noted on `sub`. A fork is an
        operator's act, not a trigger: never debounced."""
        event = sub.event
        if sub.workflow.debounce is None or event.fork is not None:
            return False
        try:
            key = debounce_key(sub.workflow, key_data(event.payload, event.meta))
        except ExpressionError as exc:
            reason = f"debounce.key of workflow '{sub.workflow.name}': {exc}"
            work.commands.append(JobRejected(event.job_id, event.workflow, reason, event.reply_to))
            return True
        windows = work.state.debounce.get(sub.workflow.name)
        if windows:
            _sweep(work, sub.workflow.name, windows)
            window = windows.get(key)
            if window is not None and window.ends_at > work.at:
                _debounce(work, sub, window, key)
                return True
        sub.debounce_key = key
        return False

    def submission_prepared(self, work: Work, sub: Submission) -> None:
        """A trailing window's job starts when the window closes."""
        debounce = sub.workflow.debounce
        if debounce is not None and sub.debounce_key is not None and debounce.mode == "trailing":
            sub.start_at = work.at + debounce.period

    def job_created(self, work: Work, job: Job, sub: Submission) -> None:
        """The new job's window opens (replacing a closed one of the same key)."""
        debounce = sub.workflow.debounce
        if debounce is None or sub.debounce_key is None:
            return
        windows = work.state.debounce.setdefault(job.workflow.name, {})
        windows.pop(sub.debounce_key, None)  # closed: the new one goes last, in time order
        windows[sub.debounce_key] = DebounceWindow(job.id, work.at + debounce.period)
        job.debounce_key = sub.debounce_key

    def job_running(self, work: Work, job: Job) -> None:
        """A job that runs once its window has closed (trailing) lets go of the window."""
        if job.debounce_key is not None:
            _close(work, job, ended=False)

    def job_settled(self, work: Work, job: Job) -> None:
        """A settled job lets go of its closed window (or of one it never ran for: cancelled
        while held); closed windows of its workflow leave memory."""
        if job.debounce_key is not None:
            _close(work, job, ended=True)
        windows = work.state.debounce.get(job.workflow.name)
        if windows:
            _sweep(work, job.workflow.name, windows)


def window_workflows(workflows: Iterable[Workflow]) -> dict[str, float]:
    """The workflows whose windows may outlive their jobs (leading debounce), with their
    period: recovery recalls their jobs that ended within it."""
    return {
        wf.name: wf.debounce.period
        for wf in workflows
        if wf.debounce is not None and wf.debounce.mode == "leading"
    }


def recall_windows(state: EngineState, event: JobsRecalled) -> list[Command]:
    """Open again the leading windows of ended jobs (oldest first) that have not closed by
    `event.at`. Applied before the replay of the running jobs: their own windows come after."""
    for job in sorted(event.jobs, key=lambda recalled: (recalled.submitted_at, recalled.job_id)):
        workflow = state.workflow(job.workflow, None)
        if workflow is None or workflow.debounce is None or workflow.debounce.mode != "leading":
            continue
        debounce = workflow.debounce
        ends_at = job.submitted_at + debounce.period
        if ends_at <= event.at:
            continue
        try:
            key = debounce_key(workflow, key_data(job.payload, job.meta))
        except ExpressionError:
            continue  # its submission was refused for it: it has no window
        windows = state.debounce.setdefault(job.workflow, {})
        windows.pop(key, None)  # a later job of the key opened the window after this one's
        windows[key] = DebounceWindow(job.job_id, ends_at)
    return []


def _debounce(work: Work, sub: Submission, window: DebounceWindow, key: str) -> None:
    """Answer a trigger of an open window: its job does the work (a held trailing job takes
    the trigger's payload and metadata)."""
    event, debounce = sub.event, sub.workflow.debounce
    assert debounce is not None
    job = work.state.jobs.get(window.job_id)
    work.concerns(job, window.job_id)  # journaled under the window's job
    if job is not None and job.status is JobStatus.SCHEDULED and debounce.mode == "trailing":
        job.payload = event.payload
        job.meta = event.meta
    window.debounced += 1
    work.commands.append(
        JobDebounced(
            event.job_id,
            sub.workflow.name,
            window.job_id,
            key,
            event.reply_to,
            debounce.mode,
            window.ends_at,
            work.at,
        )  # fmt: skip
    )


def _close(work: Work, job: Job, ended: bool) -> None:
    """Drop `job`'s window once it has closed, or when the job `ended` without having run."""
    windows = work.state.debounce.get(job.workflow.name)
    window = windows.get(job.debounce_key or "") if windows else None
    if windows is None or window is None or window.job_id != job.id:
        return
    never_ran = ended and job.start_at is not None and job.start_at > work.at
    if window.ends_at <= work.at or never_ran:
        del windows[job.debounce_key or ""]
        if not windows:
            del work.state.debounce[job.workflow.name]


def _sweep(work: Work, workflow: str, windows: dict[str, DebounceWindow]) -> None:
    """Drop the closed windows of `workflow`, oldest first, up to the first open one."""
    while windows:
        key = next(iter(windows))
        if windows[key].ends_at > work.at:
            return
        del windows[key]
    del work.state.debounce[workflow]
