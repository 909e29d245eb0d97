"""Watching runs: what the pipeline tells those who watch it (events, metrics), once committed.

An observer sees each event's commands after the journal has committed them, in the order the
engine made them, and the running jobs once recovery has replayed them. It must be quick and
must not fail: it runs on the manager's loop, between the commit and the ack.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from workflow_manager.engine import Command, Job

__all__ = ["Observer", "DeadLetterWatcher"]


class Observer(Protocol):
    """Sees every committed event's commands; adds no path of its own to the pipeline."""

    def recovered(self, jobs: Iterable[Job]) -> None:
        """The jobs running after recovery (top-level and children), before any new event."""
        ...

    def observe(self, commands: Sequence[Command]) -> None:
        """One event's commands, once its journal batch is committed."""
        ...


@runtime_checkable
class DeadLetterWatcher(Protocol):
    """An observer that also counts dead letters: told where the orchestrator makes one."""

    def dead_lettered(self, reason: str) -> None:
        """A message went to the dead-letter queue; `reason` is a short fixed label.

        The labels: bad_reply, invalid_trigger, unknown_workflow, invalid_id, invalid_payload.
        """
        ...
