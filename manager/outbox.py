"""Publishing journaled outbound messages: until the broker confirms, then marked as sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from manager.errors import BrokerError, Unroutable
from manager.journal import Batch, EventKind, EventRow, Journal
from manager.transport import Broker

__all__ = ["Outbox"]

log = logging.getLogger(__name__)

_LANES = 512


class Outbox:
    """Publishes outbound rows (step requests, outcome notices) and records their confirms."""

    def __init__(
        self,
        broker: Broker,
        journal: Journal,
        clock: Callable[[], float],
        on_fatal: Callable[[BaseException], None],
        retry_s: float = 1.0,
    ) -> None:
        self._broker = broker
        self._journal = journal
        self._clock = clock
        self._on_fatal = on_fatal
        self._retry_s = retry_s
        self._confirmed: list[tuple[str, float]] = []

    async def publish(self, rows: Iterable[EventRow]) -> None:
        """Publish rows in parallel lanes; each is marked sent in the journal once confirmed."""
        rows = list(rows)
        if len(rows) == 1:
            await self._publish_one(rows[0])
            return
        # A wide fan-out would otherwise hold all its requests in flight at once: each pending
        # confirm costs kilobytes, and more lanes than this do not publish any faster.
        queued = iter(rows)

        async def lane() -> None:
            for row in queued:
                await self._publish_one(row)

        await asyncio.gather(*(lane() for _ in range(min(_LANES, len(rows)))))

    def flush(self) -> None:
        """Journal the sent marks not yet written (at shutdown, before the journal closes)."""
        if not self._confirmed:
            return
        confirmed, self._confirmed = self._confirmed, []
        # Lazy: a lost mark only means one more publish after a crash, not worth an fsync.
        done = self._journal.append(Batch(sent=confirmed), lazy=True)
        done.add_done_callback(self._check)

    async def _publish_one(self, row: EventRow) -> None:
        await self._publish_until_confirmed(row)
        if row.msg_id is not None:
            if not self._confirmed:
                # One journal batch for every confirm of this loop tick, not one each.
                asyncio.get_running_loop().call_soon(self.flush)
            self._confirmed.append((row.msg_id, self._clock()))

    async def _publish_until_confirmed(self, row: EventRow) -> None:
        meta = row.meta
        queue = meta["queue"]
        redeclare = row.kind == EventKind.DISPATCHED
        while True:
            try:
                await self._broker.publish(
                    queue,
                    row.body or b"",
                    correlation_id=meta.get("cid"),
                    reply_to=meta.get("reply_to"),
                    headers=meta.get("headers"),
                    message_id=row.msg_id,
                )
                break
            except Unroutable as exc:
                if not redeclare:
                    # A notice to a reply queue that is gone: nobody can receive it, ever.
                    log.warning("dropped %s for '%s': %s", row.kind, queue, exc)
                    break
                # A step queue deleted under us: declare it again so the request waits there.
                log.warning("step queue '%s' vanished; declaring it again", queue)
                redeclare = False
                await self._redeclare(queue)
            except BrokerError as exc:
                log.warning("publish to '%s' failed, retrying: %s", queue, exc)
                await asyncio.sleep(self._retry_s)

    def _check(self, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            self._on_fatal(done.exception())  # type: ignore[arg-type]

    async def _redeclare(self, queue: str) -> None:
        try:
            await self._broker.declare([queue])
        except BrokerError as exc:
            log.warning("declaring '%s' failed: %s", queue, exc)
