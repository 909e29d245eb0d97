"""Names on the wire: queue names derived from the manager's queue, and header keys. Pure."""

from __future__ import annotations

__all__ = [
    "DEFAULT_QUEUE",
    "MAX_MESSAGE_BYTES",
    "HEADER_WORKFLOW",
    "HEADER_ATTEMPT",
    "HEADER_ERROR",
    "HEADER_STATUS",
    "TRIGGER_WORKFLOW_HEADER",
    "trigger_queue",
    "dead_letter_queue",
]

DEFAULT_QUEUE = "workflow-manager"
# Larger messages are refused: RabbitMQ's own limit is 128 MiB, and a job's data belongs in a store.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

HEADER_WORKFLOW = "x-workflow"
HEADER_ATTEMPT = "x-attempt"
HEADER_ERROR = "x-error"
HEADER_STATUS = "x-status"
TRIGGER_WORKFLOW_HEADER = "workflow"


def trigger_queue(queue: str) -> str:
    """The queue other systems publish job triggers to."""
    return f"{queue}.jobs"


def dead_letter_queue(queue: str) -> str:
    """The queue messages that cannot be processed at all are moved to."""
    return f"{queue}.dead"
