"""The log lines of the commands the manager carries out: a job started or ended, a retry
scheduled (each with `job=... step=... attempt=...`)."""

from __future__ import annotations

import logging

from workflow_manager.engine import BulkProgress, Command, JobFinished, JobStarted, StartTimer
from workflow_manager.engine import timers as timer_keys

__all__ = ["log_command"]

log = logging.getLogger(__name__)


def log_command(command: Command, quiet: bool = False) -> None:
    """Log `command` if it is one an operator follows (INFO for top-level jobs, unless
    `quiet`: one of the many jobs of a bulk action, whose progress has a line of its own)."""
    top = logging.DEBUG if quiet else logging.INFO
    if isinstance(command, JobStarted):
        level = top if command.parent_id is None else logging.DEBUG
        if not log.isEnabledFor(level):
            return  # a child job's line with DEBUG off: not even its fields are made
        log.log(
            level, "job started job=%s workflow=%s", command.job_id, command.workflow,
            extra={"job": command.job_id, "workflow": command.workflow},
        )  # fmt: skip
    elif isinstance(command, JobFinished):
        level = top if command.parent_id is None else logging.DEBUG
        if not log.isEnabledFor(level):
            return
        detail = f" error={command.error}" if command.error else ""
        log.log(
            level, "job %s job=%s workflow=%s%s",
            command.status, command.job_id, command.workflow, detail,
            extra={
                "job": command.job_id,
                "workflow": command.workflow,
                "step": (command.error or {}).get("step"),
            },
        )  # fmt: skip
    elif isinstance(command, StartTimer):
        key = timer_keys.parse(command.key)
        if key is not None and key.is_retry:
            log.info(
                "retry scheduled job=%s step=%s attempt=%s at=%.3f",
                key.job_id, key.step, key.attempt, command.due_at,
                extra={"job": key.job_id, "step": key.step, "attempt": key.attempt},
            )  # fmt: skip
    elif isinstance(command, BulkProgress):  # last: rare, and checked for every command
        log.info(
            "bulk %s %s: %d of %d jobs done (this slice: %d changed, %d not)",
            command.bulk_id, command.action, command.done, command.total, command.changed,
            command.refused, extra={"bulk": command.bulk_id},
        )  # fmt: skip
