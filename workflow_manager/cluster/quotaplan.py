"""One tick of the quota allocator, decided: pure, from the table's rows and the engine's uses.

`lowered` is what the engine may give back before the tick's transaction (each of our quotas
above its fair part, down to it: lowering is always safe first); `plan` is what the
transaction writes and what the engine is raised to once it has committed. Both keep the
invariant of `workflow_manager.cluster.quotas`: a limit's rows together never exceed it, and
each partition's row is at least what its engine may use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from workflow_manager.cluster.quotasplit import fair_split, want_of
from workflow_manager.engine import Quota, QuotaUse

__all__ = ["QuotaRow", "QuotaPlan", "Table", "lowered", "plan"]


@dataclass(frozen=True, slots=True)
class QuotaRow:
    """One row of `limit_quotas`: partition `partition`'s quota of `limit`, what it wants
    (`min(of, used + waiting)`) and what it used when its owner last wrote it."""

    limit: str
    partition: int
    quota: int
    want: int
    used: int


Table = Mapping[str, Mapping[int, QuotaRow]]
"""Rows of `limit_quotas` by limit, then partition."""


@dataclass(frozen=True, slots=True)
class QuotaPlan:
    """What one tick writes (`rows` upserted, `deleted` by (limit, partition)) and then
    gives the engine (`raised`)."""

    rows: tuple[QuotaRow, ...]
    deleted: tuple[tuple[str, int], ...]
    raised: tuple[Quota, ...]


def _ours(
    uses: Iterable[QuotaUse], ours: set[int] | frozenset[int]
) -> dict[str, dict[int, QuotaUse]]:
    """Our partitions' uses by limit, then partition."""
    by_limit: dict[str, dict[int, QuotaUse]] = {}
    for use in uses:
        if use.partition in ours:
            by_limit.setdefault(use.limit, {})[use.partition] = use
    return by_limit


def _targets(
    rows: Mapping[int, QuotaRow],
    mine: Mapping[int, QuotaUse],
    ours: set[int] | frozenset[int],
    turn: int,
) -> dict[int, int]:
    """Every partition's fair part of one limit: the others' wants as their rows say, ours
    as our engine says now (`turn`: whose the odd units are, `fair_split`)."""
    of = next(iter(mine.values())).of
    wants = {p: row.want for p, row in rows.items() if p not in ours}
    wants.update({p: want_of(of, use.used, use.waiting) for p, use in mine.items()})
    return fair_split(wants, of, turn)


def lowered(
    table: Table, uses: Iterable[QuotaUse], ours: set[int] | frozenset[int], turn: int = 0
) -> tuple[Quota, ...]:
    """Our quotas above their fair part (from the last read of the table and our last uses),
    lowered to it: the work under way above it finishes, and nothing more starts meanwhile."""
    quotas: list[Quota] = []
    for limit, mine in sorted(_ours(uses, ours).items()):
        targets = _targets(table.get(limit, {}), mine, ours, turn)
        quotas += [
            Quota(limit, p, targets[p]) for p, use in sorted(mine.items()) if use.quota > targets[p]
        ]
    return tuple(quotas)


def plan(
    table: Table, uses: Iterable[QuotaUse], ours: set[int] | frozenset[int], turn: int = 0
) -> QuotaPlan:
    """The tick's writes, under the limits' locks: `table` read now (every partition of each
    limit we use, and every row of ours), `uses` our engine's after lowering, `ours` the
    partitions we may write (in memory, and their leases ours at our epoch), `turn` whose
    the odd units of a split are.

    Each of our rows becomes at least what our engine may use (its quota, or its use when
    that is higher: work under way is never taken back, and writing it keeps the sum
    honest), then is raised towards its fair part by at most what the other rows leave of
    the limit. Rows of ours that are idle, or of a limit our engine no longer reports, go.
    """
    mine_by_limit = _ours(uses, ours)
    rows: list[QuotaRow] = []
    deleted: list[tuple[str, int]] = []
    raised: list[Quota] = []
    for limit, mine in sorted(mine_by_limit.items()):
        of = next(iter(mine.values())).of
        current = {p: row.quota for p, row in table.get(limit, {}).items()}
        current.update({p: max(use.quota, use.used) for p, use in mine.items()})
        targets = _targets(table.get(limit, {}), mine, ours, turn)
        for p, use in sorted(mine.items()):
            room = of - sum(quota for q, quota in current.items() if q != p)
            # The engine's quota only grows here (lowering was done before the transaction),
            # and its row keeps the use above it: work under way above a lowered quota.
            grant = max(use.quota, min(targets[p], room))
            current[p] = max(grant, use.used)
            want = want_of(of, use.used, use.waiting)
            if current[p] == 0 and want == 0 and use.used == 0:
                if p in table.get(limit, {}):
                    deleted.append((limit, p))
                continue
            rows.append(QuotaRow(limit, p, current[p], want, use.used))
            if grant > use.quota:
                raised.append(Quota(limit, p, grant))
    for limit, by_partition in sorted(table.items()):
        gone = [p for p in by_partition if p in ours and p not in mine_by_limit.get(limit, {})]
        deleted += [(limit, p) for p in sorted(gone)]
    return QuotaPlan(tuple(rows), tuple(deleted), tuple(raised))
