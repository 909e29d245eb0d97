"""Where job trees are, for a partitioned manager: the partition a new job goes to, and the
partition of an existing tree (in memory, or as the journal has it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping

from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.engine import EngineState, JobSubmitted, canonical_uuid
from workflow_manager.engine.placement import placement_key
from workflow_manager.journal import JobRow, Journal

__all__ = ["Placement"]


class Placement:
    """Placing new jobs and finding trees' partitions, from the engine state (`state()`), the
    rows of jobs that ended but are not committed yet (`ended`) and the journal."""

    def __init__(
        self,
        partitioning: Partitioning,
        journal: Journal,
        state: Callable[[], EngineState],
        ended: Mapping[str, JobRow],
    ) -> None:
        self.partitioning = partitioning
        self._journal = journal
        self._state = state
        self._ended = ended

    async def place(self, event: JobSubmitted, named: bool) -> tuple[JobSubmitted, bool]:
        """`event` with the partition its job goes to: for a `named` (sender-chosen) id, that
        of the job of that id if there is one; else by its workflow's concurrency or unique key
        (`workflow_manager.engine.placement`), else by its id. Unchanged for an id that is no UUID
        (the engine rejects it, wherever it is).

        With it, whether the id was found new: `named`, and no job of that id in memory or in
        the journal (so there is no ended job of that id to answer for, as of this read)."""
        canonical = canonical_uuid(event.job_id)
        if canonical is None:
            return event, False
        tree = await self.tree_of(canonical) if named else None
        if tree is not None:
            partition = self.partitioning.of(*tree)
        else:
            workflow = self._state().workflow(event.workflow, event.definition)
            key = placement_key(workflow, event.payload, event.meta)
            partition = self.partitioning.place(key, canonical)
        return dataclasses.replace(event, partition=partition), named and tree is None

    async def partition_of(self, job_id: str) -> int:
        """The partition of job `job_id`'s tree (by the id itself when no job has it)."""
        root, placed = await self.tree_of(job_id) or (job_id, None)
        return self.partitioning.of(root, placed)

    async def tree_of(self, job_id: str) -> tuple[str, int | None] | None:
        """The top-level job of job `job_id` and where its tree was placed (None: by the
        top-level job's id); None when no job has that id."""
        state = self._state()
        job = state.jobs.get(job_id)
        if job is not None:
            return job.root_id, job.partition
        root = state.jobs.get(state.gone.root_of(job_id) or "")  # a completed child left memory
        if root is not None:
            return root.id, root.partition
        row = self._ended.get(job_id)
        if row is not None:
            return row.root_id, row.partition
        # Its row, or for a running child (no row until it ends) the latest row filed under it.
        return await self._journal.tree_of(job_id)

    async def select(self, roots: Collection[str], wanted: set[int]) -> list[str]:
        """Those of the top-level jobs `roots` whose trees are in the `wanted` partitions: where
        the journal says each was placed, else by its id."""
        return list(await self.partitions(roots, wanted))

    async def partitions(self, roots: Collection[str], wanted: set[int]) -> dict[str, int]:
        """The partition of each of the top-level jobs `roots` whose trees are in the `wanted`
        partitions (as `select` finds them)."""
        placed = await self._journal.placements(roots)
        found = {root: self.partitioning.of(root, placed.get(root)) for root in roots}
        return {root: partition for root, partition in found.items() if partition in wanted}
