"""Group commit: one task writes every batch queued so far in one transaction, then resolves them.

Batches keep the order of `append()` calls. Other writes (definitions, retention) are queued as
operations between groups, so they never interleave with a group's transaction. After a failed
commit the writer is failed for good: every later append fails at once with the same error.

The writer knows no database: a `Store` (SQLite's in `sqlitestore`, PostgreSQL's in
`postgres.store`) writes a group's segments in one transaction and runs the operations.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from workflow_manager.errors import BatchRefused, JournalError
from workflow_manager.journal.codec import MSG_ID_INDEX as _MSG_ID
from workflow_manager.journal.codec import encode_event, encode_job, encode_sent
from workflow_manager.journal.failures import closed_error
from workflow_manager.journal.records import Batch, JobRow

__all__ = ["Writer", "Store", "Segment"]

log = logging.getLogger(__name__)
# How long a lazy batch (sent marks) may wait for company before it is written alone.
LAZY_DELAY_S = 0.1


@dataclass(slots=True)
class _Pending:
    """A batch encoded at `append()` time, so the writer only runs SQL."""

    future: asyncio.Future[None]
    events: list[tuple[Any, ...]]
    jobs: list[tuple[Any, ...]]
    sent: list[tuple[float, str]]
    msg_ids: frozenset[str]
    partition: int | None = None


@dataclass(slots=True)
class _Operation:
    future: asyncio.Future[Any]
    run: Any  # the store's kind of operation; None: a flush marker


@dataclass(slots=True)
class Segment:
    """Rows to write in this order: events inserted, jobs upserted, then sent marks applied.

    `placed`: the partitions its batches said they write for; `unplaced`: its batches that
    said none (their rows' top-level job ids say it), for a partitioned manager's fence.
    """

    events: list[tuple[Any, ...]] = field(default_factory=list)
    jobs: list[tuple[Any, ...]] = field(default_factory=list)
    sent: list[tuple[float, str]] = field(default_factory=list)
    placed: set[int] = field(default_factory=set)
    unplaced: list[_Pending] = field(default_factory=list)


class Store(Protocol):
    """The writer's one connection to a database; errors are the database's own."""

    async def write(self, segments: list[Segment]) -> None:
        """Write the segments, in order, in one transaction (rolled back if it fails)."""
        ...

    async def run(self, operation: Any) -> Any:
        """Run an operation of this store's kind (it manages its own transaction)."""
        ...

    def write_failure(self, exc: BaseException) -> JournalError | None:
        """`exc` as the journal's error when it is a database error; None when it is not."""
        ...

    async def close(self) -> None:
        """Close the connection."""
        ...


def _segments(group: list[_Pending]) -> list[Segment]:
    """Split a group where a batch inserts a msg_id an earlier batch marked sent.

    Within a segment rows are inserted before sent marks apply; the split keeps a repeated
    notice queued after its predecessor's mark pending, as it would be in separate commits.
    """
    segments = [Segment()]
    marked: set[str] = set()
    for pending in group:
        if marked and not marked.isdisjoint(pending.msg_ids):
            segments.append(Segment())
            marked = set()
        segment = segments[-1]
        segment.events.extend(pending.events)
        segment.jobs.extend(pending.jobs)
        segment.sent.extend(pending.sent)
        if pending.partition is None:
            segment.unplaced.append(pending)
        else:
            segment.placed.add(pending.partition)
        marked.update(msg_id for _, msg_id in pending.sent)
    return segments


def _settle(future: asyncio.Future[Any], error: BaseException | None, result: Any = None) -> None:
    # A caller cancelled while waiting cancels the future; the write itself still happened.
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class Writer:
    """Owns the store (the write connection) and the one task that feeds it.

    `where` names the journal in errors (a file path, or a URL without its password);
    `job_values` makes a job row's parameters for the store's statement.
    """

    def __init__(
        self,
        store: Store,
        where: str,
        job_values: Callable[[JobRow], tuple[Any, ...]] = encode_job,
    ) -> None:
        self._store = store
        self._job_values = job_values
        self._path = where
        self._loop = asyncio.get_running_loop()
        self._queue: deque[_Pending | _Operation] = deque()
        self._wake = asyncio.Event()
        self._urgent = False  # something queued must be written now (not only lazy batches)
        self._lazy_timer: asyncio.TimerHandle | None = None
        self._failure: JournalError | None = None
        self._in_flight: list[asyncio.Future[Any]] = []
        self._closed = False
        self._released = False  # the store is closed
        self.commits = 0
        # Told each group commit's seconds (metrics); the journal knows nothing of Prometheus.
        self.on_commit: Callable[[float], None] | None = None
        self._task = self._loop.create_task(self._run(), name=f"journal writer {where}")

    @property
    def failure(self) -> JournalError | None:
        """The error that failed the journal, or None while it is healthy."""
        return self._failure

    def append(self, batch: Batch, *, lazy: bool = False) -> asyncio.Future[None]:
        """Queue `batch`; the future resolves once it is committed.

        A `lazy` batch is not worth a commit of its own: it is written with the next batch
        that is, or after LAZY_DELAY_S, in its place in the order of appends either way.
        """
        future: asyncio.Future[None] = self._loop.create_future()
        refusal = self._refusal()
        if refusal is not None:
            future.set_exception(refusal)
            return future
        try:
            events = [encode_event(row) for row in batch.events]
            pending = _Pending(
                future=future,
                events=events,
                jobs=[self._job_values(row) for row in batch.jobs],
                # Ids as the rows store them (storable_text), which is how marks find them.
                sent=[encode_sent(msg_id, sent_at) for msg_id, sent_at in batch.sent],
                msg_ids=frozenset(row[_MSG_ID] for row in events if row[_MSG_ID]),
                partition=batch.partition,
            )
        except (TypeError, ValueError, RecursionError) as exc:
            # Only this batch is refused: nothing was queued, the journal stays healthy.
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            error = BatchRefused(f"cannot journal the batch (not JSON-serialisable: {reason})")
            error.__cause__ = exc
            future.set_exception(error)
            return future
        self._queue.append(pending)
        if lazy:
            if self._lazy_timer is None:
                self._lazy_timer = self._loop.call_later(LAZY_DELAY_S, self._hurry)
        else:
            self._hurry()
        return future

    def _hurry(self) -> None:
        """Write what is queued as soon as the writer is free."""
        self._urgent = True
        self._wake.set()

    async def run(self, operation: Any) -> Any:
        """Run the store's `operation` between groups and return its result (None: just wait)."""
        refusal = self._refusal()
        if refusal is not None:
            raise refusal
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue.append(_Operation(future, operation))
        self._hurry()
        return await future

    async def stop(self) -> None:
        """Write what is queued, then stop the task; later appends are refused."""
        self._closed = True
        self._wake.set()
        # wait(), not await: a task cancelled from outside must not make stop() raise.
        await asyncio.wait([self._task])

    async def close(self) -> None:
        """Stop, then close the store."""
        await self.stop()
        if self._released:
            return
        self._released = True
        await self._store.close()

    def _refusal(self) -> JournalError | None:
        """Why new work is refused at once: the journal is closed or failed."""
        if self._closed:
            return closed_error(self._path)
        return self._failed()

    def _failed(self) -> JournalError | None:
        if self._failure is None:
            return None
        # A fresh instance per future: raising one instance many times grows its traceback.
        # Of the same class, so a fenced-out commit is told from a database gone away.
        error = type(self._failure)(*self._failure.args)
        error.__cause__ = self._failure.__cause__
        return error

    async def _run(self) -> None:
        try:
            while self._queue or not self._closed:
                if not self._queue or not (self._urgent or self._closed):
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if isinstance(operation := self._queue[0], _Operation):
                    self._queue.popleft()
                    self._in_flight = [operation.future]
                    self._taken()
                    await self._operate(operation)
                else:
                    group = self._take_group()
                    self._in_flight = [pending.future for pending in group]
                    self._taken()
                    await self._commit(group)
                self._in_flight = []
        except BaseException as exc:
            # A bug or a cancelled task: nothing queued may look committed.
            if self._failure is None:
                self._failure = JournalError(
                    f"the journal writer for {self._path} stopped: {exc!r}"
                )
                log.error("journal writer stopped: %r", exc)
            self._fail_queued()
            if not isinstance(exc, Exception):
                raise

    def _taken(self) -> None:
        """Something was taken from the queue: nothing is urgent once it is empty."""
        if self._queue:
            return
        self._urgent = False
        if self._lazy_timer is not None:
            self._lazy_timer.cancel()
            self._lazy_timer = None

    def _take_group(self) -> list[_Pending]:
        group: list[_Pending] = []
        while self._queue and isinstance(self._queue[0], _Pending):
            group.append(self._queue.popleft())  # type: ignore[arg-type]
        return group

    async def _commit(self, group: list[_Pending]) -> None:
        failed = self._failure is not None
        if not failed and any(p.events or p.jobs or p.sent for p in group):
            failed = not await self._write(group)
        for pending in group:
            _settle(pending.future, self._failed() if failed else None)

    async def _write(self, group: list[_Pending]) -> bool:
        """Write `group` in one transaction; False (and the writer failed) if that failed."""
        started = time.perf_counter()
        try:
            await self._store.write(_segments(group))
        except Exception as exc:
            failure = self._store.write_failure(exc)
            if failure is None:
                raise
            self._failure = failure
            log.error("%s (%d batches not written)", self._failure, len(group))
            return False
        self.commits += 1
        if self.on_commit is not None:
            self.on_commit(time.perf_counter() - started)
        return True

    async def _operate(self, item: _Operation) -> None:
        if item.future.cancelled():
            return  # its caller gave up before it started (e.g. retention during shutdown)
        if item.run is None or self._failure is not None:
            _settle(item.future, self._failed())
            return
        try:
            result = await self._store.run(item.run)
        except Exception as exc:
            _settle(item.future, self._store.write_failure(exc) or exc)
        else:
            _settle(item.future, None, result)

    def _fail_queued(self) -> None:
        for future in self._in_flight:
            _settle(future, self._failed())
        while self._queue:
            _settle(self._queue.popleft().future, self._failed())
