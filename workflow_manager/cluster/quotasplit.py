"""The fair split of one cluster-wide limit between the partitions that want some of it.

Pure: the allocator (`workflow_manager.cluster.quotas`) calls `fair_split` with what each
partition wants (`min(limit, used + waiting)`) and moves every partition's quota towards its
part.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["fair_split", "want_of"]


def want_of(limit: int, used: int, waiting: int) -> int:
    """How much of `limit` a partition using `used` with `waiting` work waiting wants."""
    return max(0, min(limit, used + waiting))


def fair_split(wants: Mapping[int, int], limit: int, turn: int = 0) -> dict[int, int]:
    """Each partition's fair part of `limit` (partition -> part), by water-filling.

    Every partition that wants some gets `min(want, level)`, the level as high as `limit`
    allows; what the level leaves over (integers) goes one each to the partitions still
    wanting more, in partition order from the `turn`-th on (the allocator moves `turn` on
    with time, so with more wanting partitions than units none waits for ever). So the parts
    never exceed `limit` nor a partition's want, every wanting partition gets at least 1
    while `limit` covers them all, and the same wants and turn always give the same split.
    """
    parts = {partition: 0 for partition in wants}
    ordered = sorted(p for p, want in wants.items() if want > 0)
    start = turn % len(ordered) if ordered else 0
    wanting = ordered[start:] + ordered[:start]
    left = max(0, limit)
    while wanting and left > 0:
        level = left // len(wanting)
        if level == 0:
            for partition in wanting[:left]:  # fewer units than partitions: in turn
                parts[partition] += 1
            break
        still: list[int] = []
        for partition in wanting:
            given = min(level, wants[partition] - parts[partition])
            parts[partition] += given
            left -= given
            if parts[partition] < wants[partition]:
                still.append(partition)
        wanting = still
    return parts
