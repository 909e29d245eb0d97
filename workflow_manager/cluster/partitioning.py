"""Which partition a job belongs to, and the queue its replies come back on (pure).

A top-level job is placed once, when it is submitted: by its workflow's concurrency or unique
key when it has one (`workflow_manager.engine.placement`), else by its id. The partition is carried
with the job from then on (the submission's journal row, the engine's Job, its children, the
commands, the journal's `jobs.partition`); a job without one (from before keys placed jobs)
is in its top-level job id's partition.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from workflow_manager.engine.quotas import hashed_partition

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

    def of(self, root_id: str, placed: int | None = None) -> int:
        """The partition of the job tree whose top-level job is `root_id`: `placed`, where it
        was placed at submission, else its id's (stable everywhere)."""
        if placed is not None:
            return placed
        return self._hash(root_id)

    def place(self, key: str | None, job_id: str) -> int:
        """Where a new top-level job goes: by its placement key's text, else by its id."""
        return self._hash(job_id if key is None else key)

    def reply_queue(self, root_id: str, placed: int | None = None) -> str:
        """Where replies to the requests of the job tree `root_id` go: its partition's queue."""
        return partition_queue(self.queue, self.of(root_id, placed))

    def _hash(self, text: str) -> int:
        return hashed_partition(text, self.count)

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
