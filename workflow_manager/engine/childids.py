"""A task step's child job ids, derived when read instead of held.

A child's id is its element's own UUID `id`, else uuid5(parent id, "step/index")
(`engine.fanout.child_ids`). The derived ones, nearly always all of them, are not stored: a
fan-out over 100,000 elements held 9 MB of id strings for as long as its step ran, and wrote
all of them into its job's final snapshot; now it holds the parent's id, the step's name, the
count, and only the ids that are not derived (an element's own, a fork's kept child), by index.
An id is read back as the canonical lower-case hyphenated string. Pure.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

__all__ = ["ChildIds"]

# A hex digit with its two high bits set to the RFC 4122 variant (binary 10xx).
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


class ChildIds(Sequence[str]):
    """The ids of a task step's children in element order; reads as a sequence of strings."""

    __slots__ = ("_seed", "_step", "_count", "_own")

    def __init__(self, parent_id: str, step: str, count: int = 0) -> None:
        # What every derived id's hash starts with: the parent's 16 bytes, then "step/".
        self._seed = uuid.UUID(parent_id).bytes + f"{step}/".encode()
        self._step = step
        self._count = count
        self._own: dict[int, bytes] = {}  # index -> an element's own id (when not the derived)

    @classmethod
    def of(cls, parent_id: str, step: str, ids: Iterable[str]) -> ChildIds:
        """The given ids, kept only where they differ from the derived ones."""
        made = cls(parent_id, step)
        for child_id in ids:
            made.append(child_id)
        return made

    def derived(self, index: int) -> str:
        """The id element `index` has unless it brings its own: uuid5(parent, "step/index")."""
        # `uuid.uuid5` spelled out (RFC 4122: the SHA-1 of namespace and name, its first 16
        # bytes with version 5 and the RFC variant set), on the hex digest, without a UUID
        # object: a third of the time. A fan-out makes each id once to check it, and again to
        # start the child only past the first `max_in_flight` (`fanout.child_ids`).
        h = hashlib.sha1(self._seed + b"%d" % index).hexdigest()
        return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"

    def append(self, child_id: str) -> None:
        """The next element's id (any spelling of a UUID)."""
        index = self._count
        self._count += 1
        self._keep(index, child_id)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(f"child index {index} out of range (0..{self._count - 1})")
        return self._at(index)

    def __setitem__(self, index: int, child_id: str) -> None:
        if not 0 <= index < self._count:
            raise IndexError(f"child index {index} out of range (0..{self._count - 1})")
        self._keep(index, child_id)

    def __iter__(self) -> Iterator[str]:
        return (self._at(i) for i in range(self._count))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChildIds | list | tuple):
            return len(other) == self._count and all(
                a == b for a, b in zip(self, other, strict=True)
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        parent = uuid.UUID(bytes=self._seed[:16])
        return f"ChildIds({self._count} of {parent}/{self._step}, {len(self._own)} own)"

    def to_json(self) -> dict[str, Any]:
        """The ids as a snapshot keeps them: the count and the elements' own ids."""
        data: dict[str, Any] = {"count": self._count}
        if self._own:
            data["own"] = [[i, str(uuid.UUID(bytes=b))] for i, b in sorted(self._own.items())]
        return data

    @classmethod
    def from_json(cls, parent_id: str, step: str, data: dict[str, Any] | list[str]) -> ChildIds:
        """Read back `to_json`'s form, or the list of every id earlier snapshots held."""
        if isinstance(data, list):
            return cls.of(parent_id, step, data)
        made = cls(parent_id, step, int(data["count"]))
        for index, child_id in data.get("own", ()):
            made._keep(int(index), child_id)
        return made

    def _at(self, index: int) -> str:
        own = self._own.get(index)
        return str(uuid.UUID(bytes=own)) if own is not None else self.derived(index)

    def _keep(self, index: int, child_id: str) -> None:
        packed = uuid.UUID(child_id).bytes
        if str(uuid.UUID(bytes=packed)) == self.derived(index):
            self._own.pop(index, None)
        else:
            self._own[index] = packed
