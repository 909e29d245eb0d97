"""Quotas: how much of a limit that holds across managers the jobs of one partition may use.

With several managers (partitions), `max_running_jobs`, the `limits:` entries, a step's
`concurrency` and a step's `rate` count per partition: their slots and windows are named
`<name>@<partition>`, and each may use its partition's quota of the limit, not the whole of
it. The quotas of all partitions together never exceed the limit (the allocator,
`workflow_manager.cluster.quotas`, grants them under a lock in the database), and a partition's
quota moves with it when another manager takes it over, with its work under way. So at no
moment does the cluster run more than the limit.

A quota starts at 0: a partition's waiting work waits until the allocator grants it some
(`QuotasSet`, applied by `workflow_manager.engine.quotaset`, and answered by `QuotasUsed`:
what each partition uses and has waiting, which decides the next grants). A quota set below
the use of the moment takes nothing back: nothing more starts until the use is under it, and
the allocator keeps the use, not the quota, in the database meanwhile, so lowering never runs
over.

Unpartitioned (one manager), `EngineState.quotas` is None and every limit is used whole: the
names and limits are the configured ones, and nothing here runs.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "JOBS",
    "RATE",
    "STEP",
    "Quotas",
    "base_name",
    "hashed_partition",
    "partition_name",
    "quota_limit",
    "quota_name",
    "tree_partition",
]

JOBS = "jobs"
"""Quotas of limits on running top-level jobs (`max_running_jobs`, `limits:` entries)."""
STEP = "step"
"""Quotas of a step's `concurrency`."""
RATE = "rate"
"""Quotas of a step's `rate` window, or a workflow's (`workflow_manager.engine.jobrates`)."""


@dataclass(slots=True)
class Quotas:
    """The quotas of a partitioned manager (`EngineState.quotas`): `count` partitions;
    `granted` and `of` (the configured limit) by `<kind>/<name>@<partition>`, the name a
    limit's slots or window have in the engine."""

    count: int
    granted: dict[str, int] = field(default_factory=dict)
    of: dict[str, int] = field(default_factory=dict)


class _Holder(Protocol):
    """What the functions here read of the engine state (`EngineState`, which imports this
    module: named by shape, not imported)."""

    quotas: Quotas | None


class _InTree(Protocol):
    """What they read of a job (`Job`)."""

    @property
    def root_id(self) -> str: ...

    @property
    def partition(self) -> int | None: ...


def tree_partition(count: int, root_id: str, placed: int | None) -> int:
    """The partition of the job tree of top-level job `root_id`: `placed`, where it was
    placed, else its id's (`workflow_manager.cluster.partitioning.Partitioning` uses this)."""
    if placed is not None:
        return placed
    return hashed_partition(root_id, count)


def hashed_partition(text: str, count: int) -> int:
    """The partition a text (a job id, a placement key) hashes to, among `count`."""
    return zlib.crc32(text.encode()) % count


def quota_name(state: _Holder, base: str, job: _InTree) -> str:
    """The name of the slots or window of limit `base` that `job` counts in: `base` itself
    unpartitioned, else `base@<its partition>`."""
    quotas = state.quotas
    if quotas is None:
        return base
    return partition_name(state, base, tree_partition(quotas.count, job.root_id, job.partition))


def partition_name(state: _Holder, base: str, partition: int | None) -> str:
    """The name of limit `base`'s slots or window in `partition`: `base@<partition>` when
    partitioned, else (or with no partition known) `base` itself."""
    if state.quotas is None or partition is None:
        return base
    return f"{base}@{partition}"


def base_name(name: str) -> str:
    """The limit's own name, without the partition `quota_name` added (a name ends in
    `@<digits>` only when it was added: keys are JSON, and step names have no `@`)."""
    base, at, partition = name.rpartition("@")
    return base if at and partition.isdigit() else name


def quota_limit(state: _Holder, kind: str, name: str, configured: int) -> int:
    """How much of a limit of `configured` the slots or window `name` (of `kind`) may use:
    all of it unpartitioned, else its quota (0 until one is granted)."""
    quotas = state.quotas
    if quotas is None:
        return configured
    key = f"{kind}/{name}"
    quotas.of[key] = configured
    return min(configured, quotas.granted.get(key, 0))
