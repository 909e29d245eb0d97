"""Several managers: each partition's quota of the limits that hold across the cluster.

`max_running_jobs`, the `limits:` entries, a step's `concurrency`, a step's `rate` and a
workflow's `rate` hold for the whole cluster: the engine of each manager lets each partition
it runs use its quota of a limit (`workflow_manager.engine.quotas`), and the quotas live in
the table `limit_quotas` (limit, partition, quota, want, used), one row per partition that
uses, wants or holds some of a limit. Every `quota_tick_s` (`keep_quotas`), each manager:

1. lowers in its engine the quotas of its partitions above their fair part (from the
   table's last read): lowering first is always safe, and the engine keeps what is in use;
2. in one transaction, under an advisory lock per limit (taken in one order): reads every
   row of those limits, checks our leases at our epochs (a partition taken over since is
   written no more), writes each of our rows as what our engine may use now, raised towards
   its fair part (`workflow_manager.cluster.quotasplit`) by at most what the other rows
   leave of the limit, and deletes the idle ones;
3. after the commit, raises its engine's quotas to the rows written.

So a limit's rows together never exceed it, and no partition's engine uses more than its
row: the cluster never runs more than the limit. A dead manager's rows stay until another
takes its partitions over: it inherits the rows with the work under way, so a share comes
back within the failover time, never earlier. A tick that fails (the database away) is
logged and tried again at the next. A manager without partitions, or whose workflows use no
such limit, runs none of this.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import psycopg

from workflow_manager.cluster.quotaplan import QuotaPlan, QuotaRow, Table, lowered, plan
from workflow_manager.config import Workflow
from workflow_manager.engine import QuotasSet, QuotaUse
from workflow_manager.engine.extension import every_step
from workflow_manager.settings import ManagerSettings

if TYPE_CHECKING:
    from workflow_manager.cluster.ownership import Ownership
    from workflow_manager.pipeline import Pipeline

__all__ = ["QuotaAllocator", "keep_quotas", "uses_shared_limits"]

log = logging.getLogger(__name__)

# The advisory locks' first key (the second is the limit's name hashed): "WMQL".
_LOCK_CLASS = 0x574D514C
_LOCK = "SELECT pg_advisory_xact_lock(%s, %s)"
_LEASES = """
SELECT partition, owner, epoch FROM partition_leases WHERE partition = ANY(%(partitions)s)
ORDER BY partition FOR SHARE
"""
_READ = """
SELECT limit_name, partition, quota, want, used FROM limit_quotas
WHERE limit_name = ANY(%(limits)s) OR partition = ANY(%(partitions)s)
"""
_UPSERT = """
INSERT INTO limit_quotas (limit_name, partition, quota, want, used, updated_at)
SELECT l, p, q, w, u, now()
FROM unnest(%(limits)s::text[], %(partitions)s::integer[], %(quotas)s::integer[],
    %(wants)s::integer[], %(used)s::integer[]) AS t(l, p, q, w, u)
ON CONFLICT (limit_name, partition) DO UPDATE SET quota = excluded.quota,
    want = excluded.want, used = excluded.used, updated_at = excluded.updated_at
"""
_DELETE = """
DELETE FROM limit_quotas USING unnest(%(limits)s::text[], %(partitions)s::integer[])
    AS gone(l, p)
WHERE limit_name = gone.l AND partition = gone.p
"""


def uses_shared_limits(workflows: Iterable[Workflow], settings: ManagerSettings) -> bool:
    """True when a limit that holds across the cluster applies: `max_running_jobs`, a
    `limits:` entry, a workflow's `rate`, or a step (of any flow, a fallback too) with
    `concurrency` or `rate`."""
    if settings.max_running_jobs is not None or settings.job_limits:
        return True
    workflows = list(workflows)
    if any(workflow.rate is not None for workflow in workflows):
        return True
    return any(
        step.concurrency is not None or step.rate is not None
        for workflow in workflows
        for step in every_step(workflow)
    )


def _lock_key(limit: str) -> int:
    """The advisory lock's second key for `limit` (a signed 32-bit integer)."""
    value = zlib.crc32(limit.encode())
    return value - (1 << 32) if value >= 1 << 31 else value


TURN_S = 1.0
"""How long the odd units of a split stay with the same partitions (`fair_split`'s turn)."""


class QuotaAllocator:
    """The ticks of one manager (`tick`), on a connection of its own to the journal."""

    def __init__(
        self,
        pipeline: Pipeline,
        ownership: Ownership,
        conninfo: str,
        clock: Callable[[], float],
    ) -> None:
        self._pipeline = pipeline
        self._ownership = ownership
        self._conninfo = conninfo
        self._now = clock
        self._conn: psycopg.AsyncConnection | None = None
        # The table as the last tick read it, and our engine's uses then: the next tick's
        # lowering is decided from them before it reads again.
        self._table: Table = {}
        self._uses: tuple[QuotaUse, ...] = ()
        # The partitions the last transaction was for, and whether rows of ours were left:
        # with no use, the same partitions and nothing of ours left, there is nothing to write.
        self._written_for: set[int] | None = None
        self._left = False

    async def tick(self) -> QuotaPlan:
        """Lower, write the table, raise (the module's steps 1 to 3); what was written."""
        running = set(self._pipeline.partitions) & self._ownership.running
        # More partitions wanting a limit than it has units: the odd units go round, a turn
        # a second (the same turn on every manager, their clocks agreeing).
        turn = int(self._now() / TURN_S)
        down = lowered(self._table, self._uses, running, turn)
        answer = await self._pipeline.set_quotas(
            QuotasSet(down, self._now(), running=tuple(sorted(running)))
        )
        self._uses = answer.uses
        if not answer.uses and not self._left and self._written_for == running:
            return QuotaPlan((), (), ())  # idle: the table has nothing of ours
        decided = await self._write(running, answer.uses, turn)
        if decided.raised:
            raised = await self._pipeline.set_quotas(QuotasSet(decided.raised, self._now()))
            self._uses = raised.uses  # the next lowering starts from the quotas raised
        if decided.rows or decided.deleted or down:
            log.debug(
                "quotas: lowered %d, rows %s, deleted %d",
                len(down),
                ", ".join(f"{r.limit}@{r.partition}={r.quota}/{r.want}" for r in decided.rows),
                len(decided.deleted),
            )
        return decided

    async def _write(
        self, running: set[int], uses: tuple[QuotaUse, ...], turn: int
    ) -> QuotaPlan:
        """Step 2: the transaction. Our partitions whose lease is no longer ours at our
        epoch are left out (the lease keeper stops for them)."""
        conn = await self._connection()
        limits = sorted({use.limit for use in uses if use.partition in running})
        held = {p: e for p, e in self._ownership.held.items() if p in running}
        try:
            async with conn.transaction():
                for key in sorted({_lock_key(limit) for limit in limits}):
                    await conn.execute(_LOCK, (_LOCK_CLASS, key))
                leases = await conn.execute(_LEASES, {"partitions": list(held)})
                owner = self._ownership.owner
                ours = {
                    p
                    for p, who, epoch in await leases.fetchall()
                    if who == owner and held.get(p) == epoch
                }
                read = await conn.execute(_READ, {"limits": limits, "partitions": sorted(ours)})
                table = _table(QuotaRow(*row) for row in await read.fetchall())
                decided = plan(table, uses, ours, turn)
                await _store(conn, decided)
        except psycopg.Error:
            if conn.broken:
                self._conn = None
            raise
        self._table = {limit: rows for limit, rows in table.items() if limit in limits}
        self._written_for = running
        self._left = bool(decided.rows)
        return decided

    async def _connection(self) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            # A manager paused mid-tick must not hold the limits' locks (nor its lease rows)
            # for longer than a lease lives; nor does a tick wait longer for them.
            hold_ms = max(1, int(self._ownership.table.ttl_s * 1000))
            await conn.execute(f"SET idle_in_transaction_session_timeout = {hold_ms}")
            await conn.execute(f"SET lock_timeout = {hold_ms}")
            self._conn = conn
        return self._conn

    async def close(self) -> None:
        """Close the connection (our rows stay: the next owner of our partitions takes them)."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


def _table(rows: Iterable[QuotaRow]) -> dict[str, dict[int, QuotaRow]]:
    table: dict[str, dict[int, QuotaRow]] = {}
    for row in rows:
        table.setdefault(row.limit, {})[row.partition] = row
    return table


async def _store(conn: psycopg.AsyncConnection, decided: QuotaPlan) -> None:
    """Upsert the plan's rows and delete its deleted ones."""
    if decided.rows:
        rows = decided.rows
        await conn.execute(
            _UPSERT,
            {
                "limits": [r.limit for r in rows],
                "partitions": [r.partition for r in rows],
                "quotas": [r.quota for r in rows],
                "wants": [r.want for r in rows],
                "used": [r.used for r in rows],
            },
        )
    if decided.deleted:
        params: Mapping[str, object] = {
            "limits": [limit for limit, _ in decided.deleted],
            "partitions": [p for _, p in decided.deleted],
        }
        await conn.execute(_DELETE, params)


async def keep_quotas(allocator: QuotaAllocator, every_s: float) -> None:
    """Tick every `every_s` until cancelled; a tick that fails is logged (once until one
    succeeds again) and tried again at the next."""
    failing = False
    try:
        while True:
            try:
                await allocator.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database away, the pipeline failing: next tick
                said = " ".join(str(exc).split())
                (log.debug if failing else log.warning)("quotas not updated, will retry: %s", said)
                failing = True
            else:
                if failing:
                    log.info("quotas updated again")
                failing = False
            await asyncio.sleep(every_s)
    finally:
        await allocator.close()
