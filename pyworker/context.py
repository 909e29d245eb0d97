"""StepContext: what a handler may want to know about the request it is handling."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pyworker.protocol import (
    HEADER_ATTEMPT,
    HEADER_META,
    HEADER_TRACEPARENT,
    HEADER_WORKFLOW,
    header_text,
    parse_attempt,
    parse_meta,
    split_correlation_id,
)

__all__ = ["StepContext"]


@dataclass(frozen=True)
class StepContext:
    """The request's metadata, passed to handlers that declare a second parameter.

    Attributes:
        job_id: The job the request belongs to (the part of `correlation_id` before the last ':').
        step: The workflow step name (after the last ':'), or the queue name when absent.
        attempt: 1-based attempt number from the `x-attempt` header (1 when absent).
        correlation_id: The raw correlation id, `<job-id>:<step-name>`, echoed in the reply.
        workflow: The workflow name from the `x-workflow` header, or None.
        headers: All request headers, read-only.
        message_id: The request's AMQP message id, or None.
        queue: The queue the request arrived on.
        redelivered: True when RabbitMQ delivered this request before (e.g. a worker died).
        traceparent: The W3C `traceparent` header naming this attempt's span in the job's
            trace, or None; make it your span's parent (pyworker does, with OpenTelemetry).
        meta: The job's metadata from the `x-meta` header (a JSON object; {} when none),
            read-only. Add to it with `patch_meta`.
    """

    job_id: str
    step: str
    attempt: int
    correlation_id: str | None
    workflow: str | None
    headers: Mapping[str, Any] = field(repr=False, compare=False)
    message_id: str | None = None
    queue: str = ""
    redelivered: bool = False
    traceparent: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # What the handler adds to the job's metadata; sent with a successful reply.
    meta_patch: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def patch_meta(self, patch: Mapping[str, Any]) -> None:
        """Add `patch` to the job's metadata: sent as `x-meta-patch` with a successful reply,
        deep-merged by the manager (later wins), so later requests of the job carry it.

        Args:
            patch: A JSON object, e.g. `{"tenant": {"plan": "pro"}}`.
        """
        self.meta_patch.update(patch)

    @classmethod
    def from_properties(
        cls,
        *,
        queue: str,
        correlation_id: str | None,
        headers: Mapping[str, Any] | None,
        message_id: str | None = None,
        redelivered: bool = False,
    ) -> StepContext:
        """Build the context from a request's AMQP properties."""
        headers = dict(headers or {})
        job_id, step = split_correlation_id(correlation_id)
        return cls(
            job_id=job_id,
            step=step or queue,
            attempt=parse_attempt(headers.get(HEADER_ATTEMPT)) or 1,
            correlation_id=correlation_id,
            workflow=header_text(headers.get(HEADER_WORKFLOW)),
            headers=MappingProxyType(headers),
            message_id=message_id,
            queue=queue,
            redelivered=redelivered,
            traceparent=header_text(headers.get(HEADER_TRACEPARENT)),
            meta=MappingProxyType(parse_meta(headers.get(HEADER_META))),
        )

    @property
    def log_fields(self) -> str:
        """`job=... step=... attempt=...`, the fields every log line about this request carries."""
        return f"job={self.job_id or '-'} step={self.step} attempt={self.attempt}"
