"""A bulk action across several managers, split into parts (pure).

The manager asked evaluates the filter once, then splits the jobs it matched by partition:
each partition's jobs are one part, a bulk of its own journaled in that partition (so the
manager running the partition carries it out, and whoever takes the partition over goes on
with it). A part's id is drawn from the bulk's id and the partition, so that its journal id
(`bulk:<part id>`) falls in that partition: the journal's fence files it there, recovery and
take-overs find it there, and any manager can name every part of a bulk from its id alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from workflow_manager.cluster.partitioning import Partitioning
from workflow_manager.engine.bulk import bulk_journal_id

__all__ = ["MatchedJob", "part_id", "part_ids", "oldest_first", "split"]

# The namespace of parts' ids: uuid5(_PARTS, "<bulk id>:<partition>:<draw>").
_PARTS = uuid.UUID("0b3c1b7e-52a4-4f0e-8d6e-7f3c9a1e2d55")
# Each draw lands in the wanted partition with probability 1/P: with P up to a few thousand
# this many draws virtually never all miss.
_MAX_DRAWS = 100_000


@dataclass(frozen=True, slots=True)
class MatchedJob:
    """A top-level job a bulk's filter matched: when it was submitted, and its partition."""

    id: str
    partition: int
    submitted_at: float


def part_id(bulk_id: str, partition: int, partitioning: Partitioning) -> str:
    """The id of bulk `bulk_id`'s part in `partition`: the first of a fixed series of ids
    whose journal id falls in that partition (the same on every manager)."""
    for draw in range(_MAX_DRAWS):
        candidate = str(uuid.uuid5(_PARTS, f"{bulk_id}:{partition}:{draw}"))
        if partitioning.of(bulk_journal_id(candidate)) == partition:
            return candidate
    raise ValueError(f"no part id of bulk {bulk_id} falls in partition {partition}")


def part_ids(bulk_id: str, partitioning: Partitioning) -> dict[int, str]:
    """partition -> the id bulk `bulk_id`'s part there has (or would have)."""
    return {k: part_id(bulk_id, k, partitioning) for k in range(partitioning.count)}


def oldest_first(matched: Iterable[MatchedJob]) -> list[MatchedJob]:
    """Each job once (as first named: one manager's memory and the journal may both have a
    job that just ended), oldest first (by submission, then id)."""
    seen: dict[str, MatchedJob] = {}
    for job in matched:
        seen.setdefault(job.id, job)
    return sorted(seen.values(), key=lambda job: (job.submitted_at, job.id))


def split(matched: Iterable[MatchedJob]) -> dict[int, tuple[str, ...]]:
    """partition -> the ids of its jobs, oldest first (`oldest_first`), each once;
    partitions in order."""
    parts: dict[int, list[str]] = {}
    for job in oldest_first(matched):
        parts.setdefault(job.partition, []).append(job.id)
    return {k: tuple(parts[k]) for k in sorted(parts)}
