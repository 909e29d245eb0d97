"""The recovery scenario: bench/recovery.py's journal and timing, with this run's queue names."""

from __future__ import annotations

from bench import recovery as script
from bench.procs import BenchError
from bench.report import Figure, Target
from bench.session import Session
from workflow_manager.transport import manager_queues

__all__ = ["recovery"]

_QUEUES = ("split", "sum", "title", "work")


async def _time_start(session: Session, db: str, prefix: str) -> tuple[float, str]:
    try:
        pin = session.pinner.manager if session.pinner else None
        return await script.time_start(db, session.tmp / "recovery.yaml", prefix, pin)
    except SystemExit as exc:  # the script's way of saying the manager died
        raise BenchError(f"recovery: {exc.code}") from None


async def recovery(session: Session, jobs: int) -> list[Figure]:
    """Start a manager on a journal of `jobs` running word-counts jobs: seconds until it consumes.

    The baseline is the same start on an empty journal: what recovery adds is the difference.
    """
    prefix = f"{session.prefix}rec"
    session.owns(*(f"{prefix}.{name}" for name in _QUEUES), *manager_queues(f"{prefix}.wm"))
    (session.tmp / "recovery.yaml").write_text(script.WORKFLOW.replace("{p}", prefix))
    full, empty = session.journals.new("recovery"), session.journals.new("empty")
    built_s = await script.build_journal(full, prefix, jobs, 10)
    size_mb = session.journals.size_bytes(full) / 1e6
    empty_s, _ = await _time_start(session, empty, prefix)
    elapsed_s, ready = await _time_start(session, full, prefix)
    replay = ready.rsplit("ready in ", 1)[-1].rstrip(")") if "ready in " in ready else "?"
    return [
        Figure(
            f"recovery, {jobs:,} running jobs: start until consuming",
            elapsed_s,
            "s",
            empty_s,
            Target("<= 2 s", elapsed_s <= 2.0),  # issue 25
            note=f"baseline: empty journal; {replay} in the manager; "
            f"{size_mb:.0f} MB journal built in {built_s:.0f} s",
        )
    ]
