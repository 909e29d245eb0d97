"""Handing a trigger or a signal to the manager that owns its job's partition (pure).

It goes to the partition's queue (`<queue>.p<k>`, where replies come too) with the header
`x-handoff` saying what it is; whoever owns the partition then (now or after a failover)
takes it as if it had come on `<queue>.jobs` or `<queue>.signals`.
"""

from __future__ import annotations

from workflow_manager.transport import Delivery, Outbound

__all__ = ["HANDOFF_HEADER", "TRIGGER", "SIGNAL", "handed_over", "handoff_kind"]

HANDOFF_HEADER = "x-handoff"
TRIGGER = "trigger"
SIGNAL = "signal"


def handed_over(delivery: Delivery, queue: str, kind: str, job_id: str | None) -> Outbound:
    """`delivery` as a message to `queue`, marked as a `kind` hand-over; a trigger gets the
    job id chosen for it as its correlation id, so every manager makes the same job of it."""
    headers = {**delivery.headers, HANDOFF_HEADER: kind}
    # No message id: it is not journaled (the delivery stays unacked until it is confirmed).
    return Outbound(
        queue, delivery.body, job_id or delivery.correlation_id, delivery.reply_to, headers
    )


def handoff_kind(delivery: Delivery) -> str | None:
    """What a delivery of a partition's queue was handed over as; None for a worker's reply."""
    kind = delivery.headers.get(HANDOFF_HEADER)
    if isinstance(kind, bytes):
        kind = kind.decode(errors="replace")
    return kind if kind in (TRIGGER, SIGNAL) else None
