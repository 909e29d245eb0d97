"""Completed children that have left memory: which top-level job each id belongs to.

A completed child leaves memory at once (its parent keeps its result, the journal its row),
but while its top-level job runs its id stays taken: a new job may not use it, and a late
message about it names its job. A fan-out of 100,000 children leaves 100,000 such ids.

They are kept as their UUIDs' 16 bytes in an open-addressing table of three arrays (two
64-bit halves and the top-level job's number), linear probing, between half and three quarters
full: 27 to 40 bytes an id, and 16 more in the list each top-level job keeps of its own (so
forgetting the job forgets them, O(its children)); a dict of id strings took about 140. Pure.
"""

from __future__ import annotations

import uuid
from array import array

__all__ = ["GoneIds"]

_EMPTY = -1  # a slot never used since the table was built
_DELETED = -2  # a slot whose id was forgotten: probing goes on past it
_MIN_SLOTS = 64
_SLOT_STEP = 64  # a table's size is a multiple of this: rebuilt at half full, not a power of 2
ID_BYTES = 16  # a UUID


def _halves(key: bytes | bytearray) -> tuple[int, int]:
    return int.from_bytes(key[:8], "big"), int.from_bytes(key[8:], "big")


def _key(job_id: str) -> bytes:
    """A UUID's 16 bytes; ValueError when `job_id` is none. The canonical spelling is read
    without building a UUID (a third of the time): every child id is spelled so."""
    if len(job_id) == 36 and job_id[8] == job_id[13] == job_id[18] == job_id[23] == "-":
        # 32 characters left: any that is not a hex digit leaves fewer than 16 bytes.
        try:
            key = bytes.fromhex(job_id.replace("-", ""))
        except ValueError:
            key = b""
        if len(key) == ID_BYTES:
            return key
    return uuid.UUID(job_id).bytes


class GoneIds:
    """Child id -> the id of its top-level job, for completed children out of memory."""

    __slots__ = ("_hi", "_lo", "_owner", "_used", "_deleted", "_roots", "_numbers", "_members",
                 "_free")  # fmt: skip

    def __init__(self) -> None:
        self._roots: list[str | None] = []  # number -> top-level job id (None: free number)
        self._numbers: dict[str, int] = {}  # top-level job id -> number
        self._members: list[bytearray] = []  # number -> its gone children's ids, packed
        self._free: list[int] = []
        self._hi, self._lo, self._owner = _arrays(_MIN_SLOTS)
        self._used = 0  # slots holding an id
        self._deleted = 0  # slots marked _DELETED

    def __len__(self) -> int:
        return self._used

    def __contains__(self, job_id: object) -> bool:
        return isinstance(job_id, str) and self.root_of(job_id) is not None

    def as_dict(self) -> dict[str, str]:
        """Every gone id and its top-level job, in id order (for views and tests: O(n))."""
        pairs = (
            (str(uuid.UUID(int=(hi << 64) | lo)), self._roots[number])
            for hi, lo, number in zip(self._hi, self._lo, self._owner, strict=True)
            if number >= 0
        )
        return {child: root for child, root in sorted(pairs) if root is not None}

    def roots(self) -> set[str]:
        """The top-level jobs that have gone children."""
        return set(self._numbers)

    def __eq__(self, other: object) -> bool:  # the same ids of the same jobs (replay checks)
        if not isinstance(other, GoneIds):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"GoneIds({self.as_dict()!r})"

    def add(self, child_id: str, root: str) -> None:
        """`child_id` (a UUID) has left memory; its top-level job is `root`."""
        key = _key(child_id)
        number = self._number(root)
        self._members[number] += key
        hi, lo = _halves(key)
        slot = self._find(hi, lo)
        if slot >= 0:  # gone again (a retried parent's child): the latest top-level job has it
            self._owner[slot] = number
            return
        if (self._used + self._deleted + 1) * 4 > len(self._owner) * 3:
            self._build(max(_MIN_SLOTS, -(-(self._used + 1) * 2 // _SLOT_STEP) * _SLOT_STEP))
        self._insert(hi, lo, number)

    def root_of(self, job_id: str) -> str | None:
        """The top-level job of gone child `job_id` (any spelling of its UUID), else None."""
        if not self._used:
            return None
        try:
            hi, lo = _halves(_key(job_id))
        except (ValueError, TypeError, AttributeError):
            return None
        slot = self._find(hi, lo)
        return None if slot < 0 else self._roots[self._owner[slot]]

    def forget(self, root: str) -> None:
        """Top-level job `root` has left memory: its children's ids are free again."""
        number = self._numbers.pop(root, None)
        if number is None:
            return
        packed = self._members[number]
        for start in range(0, len(packed), ID_BYTES):
            slot = self._find(*_halves(packed[start : start + ID_BYTES]))
            if slot >= 0 and self._owner[slot] == number:
                self._owner[slot] = _DELETED
                self._used -= 1
                self._deleted += 1
        self._members[number] = bytearray()
        self._roots[number] = None
        self._free.append(number)
        if not self._used and len(self._owner) > _MIN_SLOTS:
            self._build(_MIN_SLOTS)  # a large fan-out's table goes with it

    def _number(self, root: str) -> int:
        number = self._numbers.get(root)
        if number is None:
            if self._free:
                number = self._free.pop()
                self._roots[number] = root
            else:
                number = len(self._roots)
                self._roots.append(root)
                self._members.append(bytearray())
            self._numbers[root] = number
        return number

    def _find(self, hi: int, lo: int) -> int:
        """The slot holding this id, or -1. The low half indexes: random in v4 and v5 UUIDs."""
        owner, his, los = self._owner, self._hi, self._lo
        size = len(owner)
        slot = lo % size
        while (held := owner[slot]) != _EMPTY:
            if held != _DELETED and los[slot] == lo and his[slot] == hi:
                return slot
            slot = slot + 1 if slot + 1 < size else 0
        return -1

    def _insert(self, hi: int, lo: int, number: int) -> None:
        owner = self._owner
        size = len(owner)
        slot = lo % size
        while owner[slot] >= 0:
            slot = slot + 1 if slot + 1 < size else 0
        if owner[slot] == _DELETED:
            self._deleted -= 1
        self._hi[slot], self._lo[slot], owner[slot] = hi, lo, number
        self._used += 1

    def _build(self, slots: int) -> None:
        """A table of `slots` slots holding the live ids (forgotten ones dropped)."""
        his, los, owners = self._hi, self._lo, self._owner
        self._hi, self._lo, self._owner = _arrays(slots)
        self._used = self._deleted = 0
        for slot, number in enumerate(owners):  # one slot at a time: no list of every id
            if number >= 0:
                self._insert(his[slot], los[slot], number)


def _arrays(slots: int) -> tuple[array[int], array[int], array[int]]:
    """Empty table arrays: each id's two 64-bit halves, and its top-level job's number."""
    return array("Q", bytes(8 * slots)), array("Q", bytes(8 * slots)), array("i", [_EMPTY]) * slots
