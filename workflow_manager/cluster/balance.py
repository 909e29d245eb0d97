"""How many partitions each manager should run (pure).

Every manager reads the same list of live members and computes the same shares: sorted by
name, the first P mod M managers run ⌈P/M⌉ partitions and the others ⌊P/M⌋. A manager above its
share hands partitions over; one below it takes free ones. Shares that every manager agrees on
settle in one round of hand-overs, where "take what you can" would pass partitions to and fro.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["share", "to_give"]


def share(partitions: int, members: Sequence[str], me: str) -> int:
    """The number of partitions `me` should run among `members` (`me` counts if missing)."""
    names = sorted({*members, me})
    whole, extra = divmod(partitions, len(names))
    return whole + (1 if names.index(me) < extra else 0)


def to_give(held: Collection[int], goal: int) -> list[int]:
    """The partitions to hand over to get down to `goal`: the highest numbered (the others
    take the lowest free ones first, so a new manager takes what was given)."""
    return sorted(held)[goal:] if len(held) > goal else []
