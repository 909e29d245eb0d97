"""/metrics for payloads by reference: what the manager's payload stage stored and read back,
read from its counts at each scrape (`workflow_manager.payloads.stage.PayloadCounts`)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from workflow_manager.payloads.stage import PayloadCounts

__all__ = ["PAYLOAD_METRIC_NAMES", "PayloadMetrics"]

_P = "workflow_manager_payload_"
PAYLOAD_METRIC_NAMES = {
    f"{_P}values_stored_total": "counter",
    f"{_P}bytes_stored_total": "counter",
    f"{_P}refs_read_total": "counter",
    f"{_P}ref_failures_total": "counter",
}
"""The payload metrics, by exposed name, with their type (for docs and tests)."""


class PayloadMetrics(Collector):
    """The payload stage's counts as Prometheus counters."""

    def __init__(self, counts: PayloadCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        """The four counters, as they stand now."""
        counts = self.counts
        yield CounterMetricFamily(
            f"{_P}values_stored", "Top-level values the manager stored in its payload store "
            "(of triggers, replies and signals over --payload-ref-threshold).",
            value=counts.stored,
        )  # fmt: skip
        yield CounterMetricFamily(
            f"{_P}bytes_stored", "Bytes of JSON the manager stored instead of journaling them.",
            value=counts.stored_bytes,
        )  # fmt: skip
        yield CounterMetricFamily(
            f"{_P}refs_read", "References read back in because a rule reads their key.",
            value=counts.loaded,
        )  # fmt: skip
        yield CounterMetricFamily(
            f"{_P}ref_failures", "Replies failed because a reference a rule reads could "
            "not be read (PayloadRefError).",
            value=counts.failed,
        )  # fmt: skip
