"""Payloads by reference, the manager's side (docs/protocol.md, "Payloads by reference"): a
stage between intake and the pipeline.

A trigger's payload, a signal's and a worker's reply larger than the threshold have their
largest top-level values stored, and the engine (and so the journal, and every request that
copies them) sees references of about 200 bytes instead. The keys a rule of the workflow reads
(`workflow_manager.config.inlinekeys`) stay inline, and a reference someone sent for such a key
is read back in before the engine sees it: nothing else is ever read. With no store configured,
nothing is stored, and a reference a rule would read fails its message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from payload_refs import PayloadStore, offload, open_store, parse_store, resolve
from payload_refs.errors import PayloadRefError
from payload_refs.refs import REF_MEMBER, Ref, refs_in
from payload_refs.resolving import encode
from workflow_manager.config import Workflow
from workflow_manager.config.inlinekeys import InlineKeys, inline_keys
from workflow_manager.config.joblimits import JobLimit
from workflow_manager.engine import EngineState, JobSubmitted, SignalReceived, StepReplied, jsontext
from workflow_manager.journal import Journal
from workflow_manager.payloads.retention import PayloadRetention
from workflow_manager.settings import ManagerSettings

__all__ = ["PayloadCounts", "PayloadRefs"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PayloadCounts:
    """What the stage did since the start, for metrics."""

    stored: int = 0  # values stored
    stored_bytes: int = 0
    loaded: int = 0  # references read back in because a rule reads their key
    failed: int = 0  # messages failed because a reference could not be read


class PayloadRefs:
    """Stores the large values of what comes in, and reads back the references rules need."""

    def __init__(
        self,
        store: PayloadStore | None,
        threshold: int,
        max_inline_bytes: int,
        workflows: Mapping[str, Workflow],
        job_limits: Sequence[JobLimit],
        workflow_of: Callable[[str], Workflow | None],
        clock: Callable[[], float] = time.time,
        retention_s: float = 3600.0,
        sweep_every_s: float = 300.0,
    ) -> None:
        self.store = store
        self._clock = clock
        self._retention_s = retention_s
        self._sweep_every_s = sweep_every_s
        self.stores: dict[str, PayloadStore] = {} if store is None else {store.name: store}
        self.counts = PayloadCounts()
        self._threshold = threshold
        self._max_inline = max_inline_bytes
        self._workflows = workflows
        self._job_limits = tuple(job_limits)
        # By definition (content hash): a job pinned to an older version reads its own keys.
        self._keep: dict[str, InlineKeys] = {}
        self._workflow_of = workflow_of

    @classmethod
    def from_settings(
        cls,
        settings: ManagerSettings,
        workflows: Mapping[str, Workflow],
        workflow_of: Callable[[str], Workflow | None],
        clock: Callable[[], float] = time.time,
    ) -> PayloadRefs:
        """The stage `serve`'s options configure (`--payload-store`, its threshold and
        retention)."""
        spec = settings.payload_store
        store = None if spec is None else open_store(parse_store(spec, "--payload-store"))
        # A short retention is looked at as often: a quarter of it, 1 s to 5 minutes apart.
        keep_s = settings.payload_retention_s
        every_s = min(settings.payload_sweep_every_s, max(1.0, keep_s / 4))
        return cls(
            store, settings.payload_ref_threshold, settings.max_message_bytes, workflows,
            settings.job_limits, workflow_of, clock, keep_s, every_s,
        )  # fmt: skip

    def retention(
        self, journal: Journal, state: Callable[[], EngineState]
    ) -> PayloadRetention | None:
        """The sweeps of the store's old values (None: no store)."""
        if self.store is None:
            return None
        return PayloadRetention(
            self.store, journal, state, self._clock, self._retention_s, self._sweep_every_s
        )

    async def close(self) -> None:
        """Let go of the store's connections."""
        if self.store is not None:
            await self.store.close()

    def _keys(self, workflow: Workflow | None) -> InlineKeys:
        """The keys the rules of `workflow` read (none: a reply no job in memory awaits)."""
        if workflow is None:
            return frozenset()
        digest = workflow.content_hash
        if digest not in self._keep:
            self._keep[digest] = inline_keys(workflow, *self._job_limits)
        return self._keep[digest]

    def concerns(self, event: StepReplied) -> bool:
        """True when a reply has values to store or references to look at: false for the common
        small reply (a scan of its bytes, nothing parsed, no await)."""
        body = event.body
        if event.error is not None:
            return False
        return (self.store is not None and len(body) > self._threshold) or REF_MEMBER in body

    async def reply(self, event: StepReplied) -> StepReplied:
        """A worker's reply with its large values stored and its rules' references read in; a
        reference that cannot be read fails the attempt (retried like any failure)."""
        if not self.concerns(event):
            return event
        body = event.body
        workflow = self._workflow_of(event.job_id.lower())
        try:
            data = jsontext.loads(body)
        except ValueError:
            return event  # not JSON: the engine says so
        if not isinstance(data, dict):
            return event
        try:
            prepared = await self._prepared(data, event.job_id.lower(), workflow, len(body))
        except PayloadRefError as exc:
            self.counts.failed += 1
            return replace(event, body=b"{}", error=f"PayloadRefError: {exc}")
        return event if prepared is data else replace(event, body=encode(prepared))

    async def submission(self, event: JobSubmitted, size: int | None = None) -> JobSubmitted:
        """A new job's payload, prepared the same way; PayloadRefError refuses the trigger.

        `size`: the payload's JSON length when known (a trigger's body); measured otherwise.
        """
        payload, workflow = event.payload, self._workflows.get(event.workflow)
        if self.store is None or not isinstance(payload, dict) or event.fork is not None:
            return event
        if workflow is None:
            return event  # no such workflow: the engine refuses it, and nothing need be stored
        prepared = await self._prepared(payload, event.job_id, workflow, size)
        return event if prepared is payload else replace(event, payload=prepared)

    async def signal(self, event: SignalReceived, workflow: Workflow | None) -> SignalReceived:
        """A signal's payload, prepared the same way; PayloadRefError refuses the signal."""
        if self.store is None or not isinstance(event.payload, dict):
            return event
        prepared = await self._prepared(event.payload, event.job_id, workflow)
        return event if prepared is event.payload else replace(event, payload=prepared)

    async def _prepared(
        self, data: dict[str, Any], job_id: str, workflow: Workflow | None, size: int | None = None
    ) -> dict[str, Any]:
        """`data` with the references under kept keys read in and its large values stored;
        `data` itself when neither applies."""
        keep = self._keys(workflow)
        needed = list(refs_in(_scope(data, keep)))
        if needed:
            self._check_inline(needed)
            data = await resolve(dict(data), self.stores, keys=keep)
            self.counts.loaded += len(needed)
        if self.store is None or keep is None:  # EVERY_KEY: nothing may be stored
            return data
        measured = len(encode(data)) if size is None or needed else size
        if measured <= self._threshold:
            return data
        try:
            stored, count = await offload(
                data, self.store, job_id.lower(), self._threshold, keep, size=measured
            )
        except PayloadRefError as exc:
            # The value can still travel inline: within --max-message-bytes, as intake saw.
            log.warning("payload store: %s; the value stays inline", exc, extra={"job": job_id})
            return data
        if not count:
            return data
        self.counts.stored += count
        self.counts.stored_bytes += measured - len(encode(stored))
        return stored

    def _check_inline(self, refs: list[Ref]) -> None:
        """Refuse to read back more than one message may hold (`--max-message-bytes`)."""
        total = sum(max(ref.size, 0) for ref in refs)
        if total > self._max_inline:
            first = refs[0]
            raise PayloadRefError(
                f"{first.uri}: a rule reads its key (a when, a job key, a schema or a task's "
                f"list), so the manager must hold it inline, and the {total:,} bytes referenced "
                f"under such keys pass --max-message-bytes ({self._max_inline:,})"
            )


def _scope(data: dict[str, Any], keep: InlineKeys) -> dict[str, Any]:
    """The part of `data` under the keys a rule reads (all of it: EVERY_KEY)."""
    if keep is None:  # EVERY_KEY
        return data
    return {key: value for key, value in data.items() if key in keep}
