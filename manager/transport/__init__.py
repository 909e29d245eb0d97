"""The RabbitMQ side: the broker adapter, wire names, and decoding inbound messages."""

from manager.transport.broker import Broker, mask_url
from manager.transport.deadletter import (
    HEADER_DEAD_FROM,
    HEADER_DEAD_REASON,
    copy_message,
    dead_letter,
)
from manager.transport.inbound import TriggerError, header_text, reply_event, trigger_event
from manager.transport.naming import (
    DEFAULT_QUEUE,
    HEADER_ATTEMPT,
    HEADER_ERROR,
    HEADER_STATUS,
    HEADER_WORKFLOW,
    MAX_MESSAGE_BYTES,
    TRIGGER_WORKFLOW_HEADER,
    dead_letter_queue,
    trigger_queue,
)

__all__ = [
    "Broker",
    "DEFAULT_QUEUE",
    "HEADER_DEAD_FROM",
    "HEADER_DEAD_REASON",
    "copy_message",
    "dead_letter",
    "HEADER_ATTEMPT",
    "HEADER_ERROR",
    "HEADER_STATUS",
    "HEADER_WORKFLOW",
    "MAX_MESSAGE_BYTES",
    "TRIGGER_WORKFLOW_HEADER",
    "TriggerError",
    "dead_letter_queue",
    "header_text",
    "mask_url",
    "reply_event",
    "trigger_event",
    "trigger_queue",
]
