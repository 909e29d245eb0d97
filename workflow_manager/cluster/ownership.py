"""This manager's partitions: taking free ones, renewing their leases, fencing each commit."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from workflow_manager.cluster.leases import LeaseTable, check_fence
from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.errors import FencedOut, JournalError

if TYPE_CHECKING:
    import psycopg

__all__ = ["Ownership"]

log = logging.getLogger(__name__)


class Ownership:
    """The leases this manager holds (partition -> epoch), kept by `take` and `renew`.

    A lease not renewed within its time to live is given up here at once (`renew` returns it
    as lost), before another manager can take it: from then on the fence refuses every commit
    for it.
    """

    def __init__(
        self,
        table: LeaseTable,
        partitioning: Partitioning,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = table
        self.partitioning = partitioning
        self.held: dict[int, int] = {}
        # Partitions being handed over: still held (their last commits are fenced as ours),
        # but nothing new of theirs starts here.
        self.giving: set[int] = set()
        # For each partition taken: seconds it had gone unrun when we took it (since its
        # previous owner's last renewal; None: never run). Its missed firings lie there.
        self.unrun_s: dict[int, float | None] = {}
        self._clock = clock
        self._renewed_at = clock()
        self.renewal_s = 0.0  # how long the last renewal took (a metric)

    @property
    def owner(self) -> str:
        """This manager's name in the lease table."""
        return self.table.owner

    @property
    def running(self) -> set[int]:
        """The partitions whose jobs we run: held, and not being handed over."""
        return set(self.held) - self.giving

    async def take(self, limit: int) -> list[int]:
        """Take up to `limit` free or expired partitions; the ones taken."""
        taken = await self.table.take(limit)
        self.held.update({partition: epoch for partition, (epoch, _) in taken.items()})
        self.unrun_s.update({partition: ago for partition, (_, ago) in taken.items()})
        if taken:
            log.info("took partitions %s", _listed(taken))
        return sorted(taken)

    def unrun_for(self, partitions: list[int], within_s: float) -> float | None:
        """How long the longest unrun of `partitions` went without a manager, when all were
        run by one until at most `within_s` ago (a hand-over, a failover); else None (never
        run, or the whole cluster was down: a start's catch-up rules apply instead)."""
        gaps = [self.unrun_s.get(partition) for partition in partitions]
        if not gaps or any(gap is None or gap > within_s for gap in gaps):
            return None
        return max(gap for gap in gaps if gap is not None)

    async def renew(self) -> list[int]:
        """Renew every lease we hold; the partitions lost (taken by another, or not renewed in
        time because the database could not be reached)."""
        started = self._clock()
        try:
            kept = await self.table.renew(self.held)
        except JournalError as exc:
            if self._clock() - self._renewed_at < self.table.ttl_s:
                log.warning("lease renewal failed, will retry: %s", exc)
                return []
            log.error("leases not renewed for %.1fs: %s", self._clock() - self._renewed_at, exc)
            kept = {}
        self._renewed_at = self._clock()
        self.renewal_s = self._renewed_at - started
        lost = sorted(set(self.held) - set(kept))
        for partition in lost:
            del self.held[partition]
        if lost:
            log.error("lost partitions %s", _listed(lost))
        return lost

    async def release(self, partitions: list[int]) -> None:
        """Give `partitions` up: stop fencing for them first, so nothing more is written."""
        for partition in partitions:
            self.held.pop(partition, None)
            self.giving.discard(partition)
        await self.table.release(partitions)

    async def fence(self, cursor: psycopg.AsyncCursor, placed: set[int], roots: set[str]) -> None:
        """The journal's fence: every partition the commit writes for is ours, at our epoch:
        those its batches were `placed` in, and those of the top-level jobs `roots` (of
        batches placed nowhere: they are in their id's partition)."""
        # Rows of no job (a stray reply's "ignored", sent marks) need every lease still ours.
        touched = placed | {self.partitioning.of(root) for root in roots} or set(self.held)
        if not touched:
            raise FencedOut("a commit while this manager holds no partition: it stops")
        missing = sorted(touched - set(self.held))
        if missing:
            raise FencedOut(
                f"a commit for partition {missing[0]}, which this manager does not hold: "
                "it writes nothing more for it and stops"
            )
        await check_fence(cursor, self.table.owner, {p: self.held[p] for p in touched})

    async def close(self) -> None:
        """Release every lease and leave (a clean stop: the others take over at once); close."""
        try:
            await self.release(list(self.held))
            await self.table.leave()
        except JournalError as exc:
            log.warning("leases not released (they expire instead): %s", exc)
        await self.table.close()


def _listed(partitions: object) -> str:
    return ", ".join(str(p) for p in sorted(partitions))  # type: ignore[call-overload]
