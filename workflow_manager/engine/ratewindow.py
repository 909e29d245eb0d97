"""One rate limit's window: at most `limit` starts in any `per` seconds, and who waits.

A sliding window, not a token bucket: a start is allowed when fewer than `limit` starts lie
in (now - per, now]; when `limit` do, the next may go at the oldest of them + `per`. The
window keeps only the times of its last `limit` starts (older ones can no longer matter),
each with the identity of the work that started (`<job>:<step>:<attempt>`, or a job id), so
that recording the same start twice (the journal's history fed at recovery, then the replay
of the same dispatch) counts it once. Pure: times are passed in.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

from workflow_manager.engine.fairness import WaitingLine

__all__ = ["RateWindow", "waits_until"]


def waits_until(due: float) -> float | None:
    """When work waiting for a window may go (`RateWindow.free_at`); None while the window's
    quota is 0 (it goes once one is granted)."""
    return None if math.isinf(due) else due


@dataclass(slots=True, eq=False)
class RateWindow:
    """The recent starts of one rate limit (one key's), and the work waiting for a turn.

    `armed` is the holder (`<job>:<step>`) whose release timer is armed (the line's next
    turn), if any.
    """

    limit: int
    per: float
    starts: deque[tuple[float, str]] = field(default_factory=deque)  # oldest first
    _ids: set[str] = field(default_factory=set)
    waiting: WaitingLine = field(default_factory=WaitingLine)
    armed: str | None = None
    passing: str | None = None  # the holder being dispatched at its turn (within one call)

    def record(self, at: float, identity: str) -> bool:
        """Count a start at `at`; False when this identity is counted already, or the start is
        older than every one the window keeps (it can no longer matter)."""
        if identity in self._ids:
            return False
        starts = self.starts
        if starts and at < starts[-1][0]:
            if len(starts) >= self.limit and at < starts[0][0]:
                return False
            items = list(starts)
            bisect.insort(items, (at, identity))
            starts.clear()
            starts.extend(items)
        else:
            starts.append((at, identity))
        self._ids.add(identity)
        while len(starts) > self.limit:
            self._ids.discard(starts.popleft()[1])
        return True

    def counts(self, identity: str) -> bool:
        """True when a start of `identity` lies in the window (as far as it keeps them)."""
        return identity in self._ids

    def discard(self, identity: str) -> None:
        """Count `identity`'s start no more (a turn given to work that did not start after
        all, or that starts later than it was counted)."""
        if identity in self._ids:
            self._ids.discard(identity)
            kept = [start for start in self.starts if start[1] != identity]
            self.starts.clear()
            self.starts.extend(kept)

    def free_at(self, now: float, limit: int | None = None) -> float:
        """When the next start may go: `now` when the window has room, else the oldest of the
        last `limit` starts + `per`. `limit` may be less than the configured one (a quota);
        none (inf) while it is 0."""
        limit = self.limit if limit is None else limit
        if limit <= 0:
            return math.inf
        if len(self.starts) < limit:
            return now
        oldest = self.starts[len(self.starts) - limit][0]
        return max(now, oldest + self.per)

    def has_room(self, now: float, limit: int | None = None) -> bool:
        """True when a start at `now` keeps at most `limit` starts in (now - per, now]."""
        return self.free_at(now, limit) <= now

    def forget_before(self, now: float) -> None:
        """Drop starts that left the window (at or before now - per)."""
        starts = self.starts
        while starts and starts[0][0] <= now - self.per:
            self._ids.discard(starts.popleft()[1])

    def is_idle(self, now: float) -> bool:
        """True when nothing waits and no start lies in the window: it may leave memory."""
        return (
            not self.waiting
            and self.armed is None
            and (not self.starts or self.starts[-1][0] <= now - self.per)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RateWindow):
            return NotImplemented
        return (self.limit, self.per, list(self.starts), self.armed) == (
            other.limit,
            other.per,
            list(other.starts),
            other.armed,
        ) and self.waiting == other.waiting

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        waiting = len(self.waiting)
        return f"<RateWindow {len(self.starts)}/{self.limit} per {self.per}s, {waiting} waiting>"
