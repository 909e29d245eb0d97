"""What a trigger's sender is told when the engine starts no job of its own for it: refused
(and why), a duplicate of an unfinished job with its unique key, or joined to an open debounce
window. The recorder adds these answers to the messages an event sends; the API and the
deliveries word their errors and logs with the same reasons.
"""

from __future__ import annotations

from workflow_manager.engine import JobDebounced, JobDuplicate, jsontext
from workflow_manager.transport.message import (
    Outbound,
    debounced_notice,
    duplicate_notice,
    outcome_notice,
)

__all__ = [
    "debounced_answer",
    "debounced_reason",
    "duplicate_answer",
    "duplicate_reason",
    "rejection_notice",
]

_REJECTED = "rejected"


def duplicate_reason(command: JobDuplicate) -> str:
    """Why a trigger started no job: which unfinished job has its unique key."""
    return (
        f"job {command.existing} of workflow '{command.workflow}' has the unique key "
        f"{command.key} and has not finished; no second job starts until it has"
    )


def duplicate_answer(command: JobDuplicate, reply_to: str) -> Outbound:
    """The `duplicate` answer to a trigger: the reason, and the job that has the key."""
    body = jsontext.dumps({"error": duplicate_reason(command), "job": command.existing})
    return duplicate_notice(reply_to, command.job_id, command.existing, body)


def debounced_reason(command: JobDebounced) -> str:
    """Why a trigger started no job of its own: the debounce window it joined."""
    start = " (it starts when the window closes, with the last trigger's payload)"
    return (
        f"job {command.existing} of workflow '{command.workflow}' was made for the debounce "
        f"key {command.key} less than its period ago{start if command.mode == 'trailing' else ''}; "
        "this trigger joined it"
    )


def debounced_answer(command: JobDebounced, reply_to: str) -> Outbound:
    """The `debounced` answer to a trigger: the reason, and the job that does its work."""
    body = jsontext.dumps({"reason": debounced_reason(command), "job": command.existing})
    return debounced_notice(reply_to, command.job_id, command.existing, body)


def rejection_notice(reply_to: str, job_id: str | None, reason: str) -> Outbound:
    """Why a trigger was refused, for its `reply_to`. Not journaled: the trigger is acked after."""
    body = jsontext.dumps({"error": reason})
    return outcome_notice(reply_to, job_id or "", _REJECTED, body, None)
