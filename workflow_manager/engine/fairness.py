"""Who goes next when work waits for a limit: best first, or fairly across keys.

Work held back by a limit (a queued job, a step waiting for a concurrency slot) waits in a
`WaitingLine`. Without fairness every waiter is in one group and the line is the rank order
(highest priority, then oldest). A workflow with `fairness: {key, weight}` puts each job (its
child jobs too) in the group of its key's value: the line then goes round-robin across the
groups that wait, weighted, and in rank order within a group, so one key's 100,000 waiting
children do not hold back another key's first step.

The round-robin is start-time fair queueing: each group has a virtual finish time that grows
by 1/weight each time one of its waiters is released; the next waiter comes from the group
with the smallest one (ties: the better rank). A group that starts waiting again catches up
to the line's clock, so a key that was idle gets no burst for the time it was away. All of it
is engine state, rebuilt by replaying the journal like the rest.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FairShare", "MAX_IDLE_GROUPS", "NO_SHARE", "Rank", "Slots", "WaitingLine"]

Rank = tuple[int, float, str]
"""A waiter's place within its group: (-priority, since when it waits, holder), best first."""


@dataclass(frozen=True, slots=True)
class FairShare:
    """The group a job's waiting work joins, and its weight (how many turns per round)."""

    group: str = ""
    weight: float = 1.0


MAX_IDLE_GROUPS = 1024
"""Groups that wait no more but are ahead of the line's clock, kept to remember that."""

NO_SHARE = FairShare()
"""Work of a workflow without `fairness`: one group, weight 1."""


@dataclass(slots=True)
class _Group:
    ranks: list[Rank] = field(default_factory=list)
    finish: float = 0.0  # virtual time: grows by 1/weight per waiter released


@dataclass(slots=True, eq=False)
class WaitingLine:
    """The waiters of one limit: each in its group, released round-robin across groups.

    A heap of (finish, first rank, group) finds the next turn in O(log groups); its entries
    go stale as groups move and are skipped (and the heap rebuilt when mostly stale). Two
    lines are equal when the same waiters wait in the same groups: the round-robin's history
    is not compared (a replay of the running jobs alone starts it afresh).
    """

    _groups: dict[str, _Group] = field(default_factory=dict)
    _share_of: dict[str, FairShare] = field(default_factory=dict)  # by holder
    _heap: list[tuple[float, Rank, str]] = field(default_factory=list)
    _idle: dict[str, None] = field(default_factory=dict)  # empty groups kept, oldest first
    _clock: float = 0.0
    _size: int = 0

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[Rank]:
        """Every waiter, group by group (for inspection; not the release order)."""
        for group in self._groups.values():
            yield from group.ranks

    def wait(self, rank: Rank, share: FairShare = NO_SHARE) -> None:
        """`rank` joins the line in its group."""
        group = self._active(share.group)
        bisect.insort(group.ranks, rank)
        self._share_of[rank[2]] = share
        self._size += 1
        if group.ranks[0] == rank:
            self._push(share.group, group)

    def leave(self, rank: Rank) -> bool:
        """`rank` leaves the line without its turn (it ended, or was cancelled); True if it
        was waiting."""
        share = self._remove(rank)
        if share is None:
            return False
        self._settle(share.group)
        return True

    def release(self, rank: Rank) -> None:
        """`rank` leaves the line because it got its slot: its group's turn is used."""
        share = self._remove(rank)
        if share is None:
            return
        group = self._groups[share.group]
        self._clock = max(self._clock, group.finish)
        group.finish += 1.0 / share.weight
        self._settle(share.group)

    def took_turn(self, share: FairShare = NO_SHARE) -> None:
        """Work of `share`'s group got a slot without waiting: its turn counts all the same,
        so a key that holds the slots does not also go first once others wait."""
        group = self._active(share.group)
        self._clock = max(self._clock, group.finish)
        group.finish += 1.0 / share.weight
        self._settle(share.group)

    def next(self) -> Rank | None:
        """The waiter whose turn it is, or None."""
        heap = self._heap
        while heap:
            finish, rank, name = heap[0]
            group = self._groups.get(name)
            if group is not None and group.ranks and group.finish == finish:
                if group.ranks[0] == rank:
                    return rank
            heapq.heappop(heap)  # stale: the group moved on since
        return None

    def in_turn(self) -> Iterator[Rank]:
        """The waiters in the order of their turns, for a scan that passes over those that
        cannot go yet (a job under several limits, one of them full). The caller may
        `release` the waiter just yielded: the scan goes on from there, in the new order.

        Each group keeps how many of its first waiters the scan has passed, so a scan of k
        waiters costs O(k * groups), not O(k^2): a hot key's long line is read once.
        """
        passed: dict[str, int] = {}
        while True:
            best: tuple[float, Rank, str] | None = None
            for name, group in self._groups.items():
                at = passed.get(name, 0)
                if at < len(group.ranks) and (
                    best is None or (group.finish, group.ranks[at]) < best[:2]
                ):
                    best = (group.finish, group.ranks[at], name)
            if best is None:
                return
            _, rank, name = best
            yield rank
            still = self._groups.get(name)
            at = passed.get(name, 0)
            if still is not None and at < len(still.ranks) and still.ranks[at] == rank:
                passed[name] = at + 1  # passed over: still waiting

    def keep_only(self, keep: Callable[[Rank], bool]) -> None:
        """Drop every waiter `keep` says no to (without their turns)."""
        for rank in [rank for rank in self if not keep(rank)]:
            self.leave(rank)

    def _active(self, name: str) -> _Group:
        """Group `name`, about to have work: a new or idle one starts no earlier than the
        clock (no burst of turns for the time it was away)."""
        group = self._groups.get(name)
        if group is None:
            group = self._groups[name] = _Group(finish=self._clock)
        elif not group.ranks:
            self._idle.pop(name, None)
            group.finish = max(group.finish, self._clock)
        return group

    def _remove(self, rank: Rank) -> FairShare | None:
        share = self._share_of.pop(rank[2], None)
        if share is None:
            return None
        group = self._groups[share.group]
        index = bisect.bisect_left(group.ranks, rank)
        if index < len(group.ranks) and group.ranks[index] == rank:
            del group.ranks[index]
            self._size -= 1
            return share
        self._share_of[rank[2]] = share  # the same holder waits under another rank
        return None

    def _push(self, name: str, group: _Group) -> None:
        if len(self._heap) > 2 * len(self._groups) + 16:
            self._heap = [(g.finish, g.ranks[0], n) for n, g in self._groups.items() if g.ranks]
            heapq.heapify(self._heap)
        else:
            heapq.heappush(self._heap, (group.finish, group.ranks[0], name))

    def _settle(self, name: str) -> None:
        """After a turn or a departure in `name`: its next waiter's turn, or the group idles.

        An empty group not ahead of the clock would restart at the clock anyway, so it is
        dropped; one ahead keeps its place until the clock passes it (checked two at a time,
        oldest first, as the clock moves), and at most `MAX_IDLE_GROUPS` are kept (the oldest
        go first: one of them back later may get a turn early). Memory stays with the groups
        that wait or were served lately.
        """
        group = self._groups[name]
        if group.ranks:
            self._push(name, group)
        elif group.finish <= self._clock:
            del self._groups[name]
        else:
            self._idle.pop(name, None)
            self._idle[name] = None  # the newest idle group, last
        dropped = 0
        while self._idle:
            oldest = next(iter(self._idle))
            if len(self._idle) <= MAX_IDLE_GROUPS and (
                dropped == 2 or self._groups[oldest].finish > self._clock
            ):
                break
            del self._idle[oldest], self._groups[oldest]
            dropped += 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WaitingLine):
            return NotImplemented
        return self._share_of == other._share_of and sorted(self) == sorted(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        groups: dict[str, Any] = {name: len(g.ranks) for name, g in self._groups.items()}
        return f"<WaitingLine {self._size} waiting {groups}>"


@dataclass(slots=True)
class Slots:
    """One concurrency limit: who holds its slots, and who waits for one, in turn.

    A holder is a job id (job limits) or `<job id>:<step>` (step limits); a holder still
    queued has a slot reserved and its start timer running. The waiting go in rank order
    (highest priority, then oldest), or round-robin across fairness keys
    (`workflow_manager.engine.fairness`).
    """

    limit: int
    holders: set[str] = field(default_factory=set)
    waiting: WaitingLine = field(default_factory=WaitingLine)

    @property
    def free(self) -> int:
        """Slots neither held nor reserved."""
        return self.limit - len(self.holders)

    def wait(self, rank: Rank, share: FairShare = NO_SHARE) -> None:
        """Join the waiting line (in `share`'s group)."""
        self.waiting.wait(rank, share)

    def leave(self, rank: Rank) -> None:
        """Leave the waiting line without a slot, if on it."""
        self.waiting.leave(rank)

    def release(self, rank: Rank) -> None:
        """Leave the waiting line for a slot (its group's turn), if on it."""
        self.waiting.release(rank)
