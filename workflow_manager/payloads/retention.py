"""Retention of stored payload values (docs/protocol.md, "Payloads by reference"): a job's
values go once its top-level job has ended, `--payload-retention` ago, and nothing this
manager holds in memory refers to them (a fork may refer to its source's values)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any

from payload_refs import PayloadStore
from payload_refs.errors import PayloadRefError
from payload_refs.refs import refs_in
from workflow_manager.engine import EngineState, Job
from workflow_manager.errors import JournalError
from workflow_manager.journal import JobRow, Journal

__all__ = ["PayloadRetention", "referenced_jobs"]

log = logging.getLogger(__name__)


def _held(job: Job) -> Iterator[Any]:
    """Every value of a job in memory a reference may hide in."""
    yield job.payload
    yield job.result
    yield job.signals
    for run in job.steps.values():
        yield run.input
        yield run.output
        yield run.child_results
        if run.reduction is not None:
            yield run.reduction.accumulator
    if job.fork is not None:
        yield job.fork.input


def referenced_jobs(state: EngineState) -> set[str]:
    """The jobs whose stored values the jobs in memory refer to (a reference's key's first
    segment)."""
    return {
        ref.job_id for job in state.jobs.values() for value in _held(job) for ref in refs_in(value)
    }


class PayloadRetention:
    """Removes the stored values of jobs long ended, every `every_s` seconds."""

    def __init__(
        self,
        store: PayloadStore,
        journal: Journal,
        state: Callable[[], EngineState],
        clock: Callable[[], float],
        keep_s: float,
        every_s: float,
    ) -> None:
        self._store = store
        self._journal = journal
        self._state = state
        self._now = clock
        self._keep_s = keep_s
        self._every_s = every_s

    async def run(self) -> None:
        """Sweep now and then, for as long as the manager runs; a store or journal that
        fails one sweep is logged and tried at the next."""
        while True:
            try:
                await self.sweep()
            except (PayloadRefError, JournalError) as exc:
                log.warning("payload retention: %s; trying again in %gs", exc, self._every_s)
            await asyncio.sleep(self._every_s)

    async def sweep(self) -> int:
        """Remove the values of every job whose top-level job ended `keep_s` ago (or that the
        journal no longer knows); how many jobs' values went."""
        cutoff = self._now() - self._keep_s
        candidates = await self._store.job_ids(stored_before=cutoff)
        if not candidates:
            return 0
        roots: dict[str, JobRow | None] = {}
        gone: list[str] = []
        for job_id in sorted(candidates):
            row = await self._journal.job(job_id)
            if row is not None and row.root_id != row.id:
                if row.root_id not in roots:
                    roots[row.root_id] = await self._journal.job(row.root_id)
                row = roots[row.root_id]
            if row is None or (row.finished_at is not None and row.finished_at < cutoff):
                gone.append(job_id)
        if gone:
            held = referenced_jobs(self._state())
            gone = [job_id for job_id in gone if job_id not in held]
        removed = await self._store.remove_jobs(gone)
        if removed:
            log.info("payload retention: removed the stored values of %d jobs", removed)
        return removed
