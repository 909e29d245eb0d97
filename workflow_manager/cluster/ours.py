"""Which job trees are ours to run, and where a new job goes (several managers).

Unpartitioned (`ownership` None), each answer is immediate: everything is ours.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from workflow_manager.engine import JobSubmitted, canonical_uuid
from workflow_manager.errors import NotOwner

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.cluster.placement import Placement
    from workflow_manager.pipeline import Pipeline

__all__ = ["OurTrees"]


class OurTrees:
    """Answers whose a job tree is (`NotOwner` when another manager's), the partitions whose
    work is handled here now, and the partition a new job goes to."""

    def __init__(
        self,
        pipeline: Pipeline,
        ownership: Ownership | None,
        placement: Placement | None,
        new_id: Callable[[], str],
    ) -> None:
        self._pipeline = pipeline
        self._ownership = ownership
        self._placement = placement
        self._new_id = new_id

    def __repr__(self) -> str:
        return f"<OurTrees partitioned={self._ownership is not None}>"

    def new_job_id(self) -> str:
        """A new job id; partitioned, one in a partition of ours when we run any."""
        if self._ownership is None:
            return self._new_id()
        drawn = self._ownership.partitioning.new_id_in(self.runs_now(), self._new_id)
        return drawn if drawn is not None else self._new_id()

    def runs_now(self) -> AbstractSet[int]:
        """The partitions whose work is handled here now: their jobs are in memory and they
        are not being handed over. Not `Ownership.running`: a partition just taken is held
        before its adoption has replayed its jobs, and a trigger or signal for it meanwhile
        would not find them (a trigger redelivered after its manager died would start its job
        a second time, or be answered with the journal's `running`); it goes to the partition's
        queue instead, which is consumed once the adoption is done."""
        assert self._ownership is not None
        return self._pipeline.partitions - self._ownership.giving

    def owns(self, root_id: str, placed: int | None = None) -> bool:
        """True when the job tree `root_id` (placed in `placed`, else by its id) is ours to run
        (always, unpartitioned)."""
        if self._ownership is None:
            return True
        return self._ownership.partitioning.of(root_id, placed) in self.runs_now()

    def require_owner(self, root_id: str, placed: int | None = None) -> None:
        """NotOwner (the API asks that manager instead) for a job tree another manager runs
        (placed in `placed`, else by its id)."""
        if not self.owns(root_id, placed):
            assert self._ownership is not None
            partition = self._ownership.partitioning.of(root_id, placed)
            raise NotOwner(
                f"job {root_id} is in partition {partition}, which another manager runs",
                partition,
            )

    async def placed(self, event: JobSubmitted, named: bool) -> tuple[JobSubmitted, bool]:
        """`event` with the partition its job goes to, and whether its `named` id was found new
        (`Placement.place`); unpartitioned, as is (and not looked up: False)."""
        if self._placement is None:
            return event, False
        return await self._placement.place(event, named)

    async def tree_of(self, job_id: str) -> tuple[str, int | None] | None:
        """Partitioned: `job_id`'s top-level job and where its tree was placed
        (`Placement.tree_of`); None when no job has that id."""
        assert self._placement is not None
        return await self._placement.tree_of(job_id)

    async def foreign_partition(self, job_id: str) -> int | None:
        """The partition of `job_id`'s tree when another manager runs it; None when we do."""
        if self._ownership is None or job_id in self._pipeline.state.jobs:
            return None
        assert self._placement is not None
        partition = await self._placement.partition_of(canonical_uuid(job_id) or job_id)
        return None if partition in self.runs_now() else partition
