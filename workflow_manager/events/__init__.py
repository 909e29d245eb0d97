"""Run events: what changed in each run, for `GET /api/events`, the broker and `watch`."""

from workflow_manager.events.hub import EventFilter, EventHub, Resume, Subscription, parse_event_id
from workflow_manager.events.model import EVENT_TYPES, RunEvent, run_events

__all__ = [
    "EVENT_TYPES",
    "EventFilter",
    "EventHub",
    "Resume",
    "RunEvent",
    "Subscription",
    "parse_event_id",
    "run_events",
]
