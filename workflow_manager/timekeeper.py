"""The engine's timers on the event loop: armed from StartTimer commands, fired as events.

Due times are wall-clock (they come from the journal's events), so a timer armed again after
a restart fires when it was meant to, or at once if that moment has passed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Timekeeper"]


class Timekeeper:
    """Calls `on_due(key)` when each armed timer comes due; cancelled ones never fire."""

    def __init__(self, clock: Callable[[], float], on_due: Callable[[str], None]) -> None:
        self._clock = clock
        self._on_due = on_due
        self._handles: dict[str, asyncio.TimerHandle] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._handles)

    def arm(self, key: str, due_at: float) -> None:
        """Fire `key` at `due_at` (unix seconds); re-arming a key replaces its old due time."""
        if self._closed:
            return
        self.cancel(key)
        delay_s = max(0.0, due_at - self._clock())
        self._handles[key] = asyncio.get_running_loop().call_later(delay_s, self._fire, key)

    def cancel(self, key: str) -> None:
        """Forget `key`; nothing happens if it is not armed."""
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def clear(self) -> None:
        """Cancel every timer; later ones are armed as usual (memory rebuilt, timers anew)."""
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def close(self) -> None:
        """Cancel every timer and arm no more (they are journaled: the next start re-arms)."""
        self._closed = True
        self.clear()

    def _fire(self, key: str) -> None:
        self._handles.pop(key, None)
        self._on_due(key)
