"""A worker's side of payloads by reference (docs/protocol.md, "Payloads by reference"): resolve
the references in a request before its handler runs, store a large reply's values after.

A request without the `x-payload-refs` header is never scanned, and a worker without a store
replies as it always has: the common path costs nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from payload_refs import errors as shared
from payload_refs.refs import REFS_HEADER, count_ref_keys, ref_count
from payload_refs.resolving import DEFAULT_THRESHOLD, encode, offload, resolve
from payload_refs.stores import PayloadStore, StoreSpec, open_store
from pyworker.context import StepContext
from pyworker.errors import PayloadRefError
from pyworker.protocol import Reply

__all__ = ["NO_PAYLOADS", "Payloads", "reply_job_id"]

log = logging.getLogger(__name__)


def reply_job_id(ctx: StepContext) -> str:
    """The job a reply's values are stored for: the correlation id before its first ':'."""
    return (ctx.correlation_id or "").partition(":")[0]


@dataclass
class Payloads:
    """The stores a worker resolves references from (by name) and the one it stores replies in
    (the first), with the reply size above which it stores values."""

    stores: dict[str, PayloadStore] = field(default_factory=dict)
    threshold: int = DEFAULT_THRESHOLD

    @classmethod
    def open(cls, specs: Sequence[StoreSpec], threshold: int = DEFAULT_THRESHOLD) -> Payloads:
        """The stores `specs` name, opened (PostgreSQL connects at its first use)."""
        return cls({spec.name: open_store(spec) for spec in specs}, threshold)

    @property
    def reply_store(self) -> PayloadStore | None:
        """Where replies' values go: the first store, or None without stores."""
        return next(iter(self.stores.values()), None)

    def describe(self) -> str:
        """The stores by name and location (no passwords) and the threshold, for the log."""
        named = ", ".join(f"{name}={store.where}" for name, store in self.stores.items())
        return f"payload stores {named}; replies above {self.threshold} bytes are stored"

    async def resolve_request(
        self, data: dict[str, Any], headers: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """`data` with its references replaced by their values, when `headers` say it holds any.

        Raises:
            PayloadRefError: A reference cannot be resolved (its message names it and why).
        """
        if ref_count(headers) == 0:
            return data
        try:
            return await resolve(data, self.stores)
        except shared.PayloadRefError as exc:
            raise PayloadRefError(str(exc)) from None

    async def store_reply(self, reply: Reply, result: Mapping[str, Any], ctx: StepContext) -> Reply:
        """`reply` (encoding `result`) with its largest values stored when it is over the
        threshold, and `x-payload-refs` set when its body holds references.

        Raises:
            PayloadRefError: A value cannot be stored (the manager retries the step).
        """
        store = self.reply_store
        if store is None:
            return reply
        if len(reply.body) > self.threshold:
            # The reply is spaced JSON; `offload` measures the compact text the store holds.
            try:
                body, stored = await offload(dict(result), store, reply_job_id(ctx), self.threshold)
            except shared.PayloadRefError as exc:
                raise PayloadRefError(str(exc)) from None
            if stored:
                reply = Reply(body=encode(body), headers=dict(reply.headers))
        count = count_ref_keys(reply.body)
        if count:
            reply.headers[REFS_HEADER] = count
        return reply

    async def close(self) -> None:
        """Let go of the stores' connections; a failure is only logged (the worker is stopping)."""
        for name, store in self.stores.items():
            try:
                await store.close()
            except Exception as exc:  # a broken connection is let go of all the same
                log.debug("closing payload store %r: %s", name, exc)


NO_PAYLOADS = Payloads()  # no stores: a request with references fails, replies stay inline
