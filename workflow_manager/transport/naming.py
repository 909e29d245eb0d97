"""Names on the wire: queue names derived from the manager's queue, and header keys. Pure."""

from __future__ import annotations

from payload_refs.refs import REFS_HEADER
from workflow_manager.limits import MAX_MESSAGE_BYTES as _MAX_MESSAGE_BYTES

__all__ = [
    "manager_queues",
    "DEFAULT_QUEUE",
    "MAX_MESSAGE_BYTES",
    "HEADER_WORKFLOW",
    "HEADER_ATTEMPT",
    "HEADER_ERROR",
    "HEADER_STATUS",
    "HEADER_JOB_ID",
    "TRIGGER_WORKFLOW_HEADER",
    "HEADER_EVENT",
    "HEADER_TRACEPARENT",
    "HEADER_DELAY",
    "HEADER_NOT_BEFORE",
    "HEADER_PRIORITY",
    "trigger_queue",
    "signal_queue",
    "dead_letter_queue",
    "events_exchange",
    "event_routing_key",
]

DEFAULT_QUEUE = "workflow-manager"
# Larger messages are refused: RabbitMQ's own limit is 128 MiB, and a job's data belongs in a store.
MAX_MESSAGE_BYTES = _MAX_MESSAGE_BYTES  # workflow_manager.limits holds every limit

HEADER_WORKFLOW = "x-workflow"
HEADER_ATTEMPT = "x-attempt"
HEADER_ERROR = "x-error"
HEADER_STATUS = "x-status"
HEADER_JOB_ID = "x-job-id"  # on a `duplicate` / `debounced` answer: the job that does the work
TRIGGER_WORKFLOW_HEADER = "workflow"
HEADER_EVENT = "x-event"  # a run event's type, on the events exchange
# W3C trace context: on a trigger (the caller's span) and on each step request (the attempt's).
HEADER_TRACEPARENT = "traceparent"
# A trigger's delayed start: seconds from now, or a time (RFC 3339 or Unix seconds).
HEADER_DELAY = "x-delay"
HEADER_NOT_BEFORE = "x-not-before"
# A trigger's priority (0-9, higher first); step requests carry it as the AMQP `priority`.
HEADER_PRIORITY = "x-priority"
# Job metadata: a JSON object on a trigger and on every request of the job (and its children);
# a reply may add to it with a JSON object patch (deep-merged, later wins).
HEADER_META = "x-meta"
HEADER_META_PATCH = "x-meta-patch"
# A body that holds payload references (docs/protocol.md): how many `$ref` members it has
# (the format's own names, `payload_refs.refs`).
HEADER_PAYLOAD_REFS = REFS_HEADER


def trigger_queue(queue: str) -> str:
    """The queue other systems publish job triggers to."""
    return f"{queue}.jobs"


def signal_queue(queue: str) -> str:
    """The queue other systems publish signals for waiting steps to."""
    return f"{queue}.signals"


def dead_letter_queue(queue: str) -> str:
    """The queue messages that cannot be processed at all are moved to."""
    return f"{queue}.dead"


def manager_queues(queue: str) -> tuple[str, ...]:
    """Every queue a manager on `queue` declares for itself (not its partitions' or steps')."""
    return (queue, trigger_queue(queue), signal_queue(queue), dead_letter_queue(queue))


def events_exchange(queue: str) -> str:
    """The durable topic exchange run events are published to."""
    return f"{queue}.events"


def event_routing_key(workflow: str, event_type: str) -> str:
    """A run event's routing key on the events exchange, e.g. `book-word-counts.job.completed`."""
    return f"{workflow}.{event_type}"
