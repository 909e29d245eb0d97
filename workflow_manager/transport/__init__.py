"""The broker side: the `Transport` protocol, its RabbitMQ adapter, wire names and messages."""

from workflow_manager.transport.broker import Broker, mask_url
from workflow_manager.transport.deadletter import (
    HEADER_DEAD_AT,
    HEADER_DEAD_FROM,
    HEADER_DEAD_REASON,
    copy_message,
    dead_letter,
)
from workflow_manager.transport.message import (
    Delivery,
    Outbound,
    header_text,
    outcome_notice,
    split_correlation_id,
    step_request,
)
from workflow_manager.transport.naming import (
    DEFAULT_QUEUE,
    HEADER_ATTEMPT,
    HEADER_ERROR,
    HEADER_EVENT,
    HEADER_STATUS,
    HEADER_WORKFLOW,
    MAX_MESSAGE_BYTES,
    TRIGGER_WORKFLOW_HEADER,
    dead_letter_queue,
    event_routing_key,
    events_exchange,
    manager_queues,
    signal_queue,
    trigger_queue,
)
from workflow_manager.transport.protocol import Handler, Transport

__all__ = [
    "Broker",
    "DEFAULT_QUEUE",
    "Delivery",
    "HEADER_DEAD_AT",
    "HEADER_DEAD_FROM",
    "HEADER_DEAD_REASON",
    "copy_message",
    "dead_letter",
    "HEADER_ATTEMPT",
    "HEADER_ERROR",
    "HEADER_EVENT",
    "HEADER_STATUS",
    "HEADER_WORKFLOW",
    "Handler",
    "MAX_MESSAGE_BYTES",
    "Outbound",
    "TRIGGER_WORKFLOW_HEADER",
    "Transport",
    "dead_letter_queue",
    "event_routing_key",
    "events_exchange",
    "header_text",
    "manager_queues",
    "mask_url",
    "outcome_notice",
    "split_correlation_id",
    "step_request",
    "signal_queue",
    "trigger_queue",
]
