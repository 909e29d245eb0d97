"""Which partition a job belongs to, and the queue its replies come back on (pure).

A job's partition is a function of its top-level job's id alone, so a child, a reply, a timer
and a recovery all agree on it without reading anything.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection
from dataclasses import dataclass

__all__ = ["Partitioning", "partition_queue"]

# A new job id is drawn again until it falls in a partition we own: with P partitions and
# k owned, a draw lands in ours with probability k/P, so this many tries virtually never fail.
_MAX_DRAWS = 1000


def partition_queue(queue: str, partition: int) -> str:
    """The reply (and hand-over) queue of `partition`: `<queue>.p<k>`."""
    return f"{queue}.p{partition}"


@dataclass(frozen=True, slots=True)
class Partitioning:
    """`count` partitions of the jobs of the manager queue `queue`."""

    queue: str
    count: int

    def of(self, root_id: str) -> int:
        """The partition of the job tree whose top-level job is `root_id` (stable everywhere)."""
        return zlib.crc32(root_id.encode()) % self.count

    def reply_queue(self, root_id: str) -> str:
        """Where replies to the requests of the job tree `root_id` go: its partition's queue."""
        return partition_queue(self.queue, self.of(root_id))

    def queues(self) -> list[str]:
        """Every partition's queue, in partition order."""
        return [partition_queue(self.queue, k) for k in range(self.count)]

    def new_id_in(self, owned: Collection[int], new_id: Callable[[], str]) -> str | None:
        """A fresh job id (from `new_id`) in one of the `owned` partitions; None if none is."""
        if not owned:
            return None
        for _ in range(_MAX_DRAWS):
            job_id = new_id()
            if self.of(job_id) in owned:
                return job_id
        return None
