"""The quota allocator on a real PostgreSQL table (`cluster.quotas`), with fake engines: two
managers' ticks keep a limit's rows within it and each engine within its row, a partition
taken over is written no more, and a tick that fails does not stop the ticking."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from types import SimpleNamespace

import psycopg
import pytest

from tests.pgdatabase import fresh_database, skip_without_postgres
from workflow_manager.cluster.leases import configure_partitions
from workflow_manager.cluster.quotas import QuotaAllocator, keep_quotas, uses_shared_limits
from workflow_manager.config import parse_workflows
from workflow_manager.engine import QuotasSet, QuotasUsed, QuotaUse
from workflow_manager.journal import open_journal
from workflow_manager.settings import ManagerSettings

LIMIT = "step/wf:wf:fetch"
OF = 3


class _Engine:
    """A partitioned engine as the allocator sees it: one limit of OF, a quota per partition
    (at least its use), work starting only below it."""

    def __init__(self, partitions: set[int], waiting: int) -> None:
        self.partitions = set(partitions)
        self.quota = dict.fromkeys(partitions, 0)
        self.used = dict.fromkeys(partitions, 0)
        self.waiting = dict.fromkeys(partitions, waiting)

    async def set_quotas(self, event: QuotasSet) -> QuotasUsed:
        for quota in event.quotas:
            self.quota[quota.partition] = max(quota.quota, self.used[quota.partition])
        for p in self.partitions:
            while self.waiting[p] and self.used[p] < self.quota[p]:
                self.waiting[p] -= 1
                self.used[p] += 1
        return QuotasUsed(
            tuple(
                QuotaUse(LIMIT, p, OF, self.quota[p], self.used[p], self.waiting[p])
                for p in sorted(self.partitions)
                if self.quota[p] or self.used[p] or self.waiting[p]
            )
        )


@pytest.fixture
def pg_url() -> Iterator[str]:
    skip_without_postgres()
    with fresh_database() as url:
        yield url


async def _leases(url: str, owners: dict[int, str]) -> dict[int, int]:
    """Partitions 0-3 in the table, leased to `owners`; partition -> epoch."""
    journal = await open_journal(url)
    await journal.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await configure_partitions(conn, 4)
        for partition, owner in owners.items():
            await conn.execute(
                "UPDATE partition_leases SET owner = %s, epoch = 1 WHERE partition = %s",
                (owner, partition),
            )
    return dict.fromkeys(owners, 1)


def _allocator(url: str, engine: _Engine, owner: str, held: dict[int, int]) -> QuotaAllocator:
    table = SimpleNamespace(ttl_s=3.0)
    ownership = SimpleNamespace(owner=owner, held=held, running=set(held), table=table)
    return QuotaAllocator(engine, ownership, url, lambda: 0.0)  # type: ignore[arg-type]


def _rows(url: str) -> dict[int, tuple[int, int, int]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT partition, quota, want, used FROM limit_quotas").fetchall()
    return {p: (q, w, u) for p, q, w, u in rows}


async def test_two_managers_share_a_limit_within_it(pg_url):
    epochs = await _leases(pg_url, {0: "a", 1: "a", 2: "b", 3: "b"})
    engines = [_Engine({0, 1}, waiting=50), _Engine({2, 3}, waiting=50)]
    allocators = [
        _allocator(pg_url, engines[0], "a", {p: epochs[p] for p in (0, 1)}),
        _allocator(pg_url, engines[1], "b", {p: epochs[p] for p in (2, 3)}),
    ]
    try:
        for round_ in range(12):
            if round_ % 3 == 2:  # some work ends
                for engine in engines:
                    for p in engine.partitions:
                        engine.used[p] = max(0, engine.used[p] - 1)
            for allocator, engine in zip(allocators, engines, strict=True):
                await allocator.tick()
                rows = _rows(pg_url)
                assert sum(q for q, _, _ in rows.values()) <= OF
                for p in engine.partitions:
                    assert engine.used[p] <= engine.quota[p] <= rows.get(p, (0, 0, 0))[0]
        assert sum(sum(engine.used.values()) for engine in engines) == OF, "the limit unused"
        assert sum(engines[1].used.values()) > 0, "manager b never got a share"
    finally:
        for allocator in allocators:
            await allocator.close()


async def test_a_partition_taken_over_is_written_no_more_and_its_row_stays(pg_url):
    epochs = await _leases(pg_url, {0: "a", 1: "a"})
    engine = _Engine({0, 1}, waiting=2)
    allocator = _allocator(pg_url, engine, "a", epochs)
    try:
        await allocator.tick()
        before = _rows(pg_url)
        assert before[0][0] + before[1][0] == 3
        with psycopg.connect(pg_url, autocommit=True) as conn:  # another manager takes 1
            conn.execute("UPDATE partition_leases SET owner = 'b', epoch = 2 WHERE partition = 1")
        engine.used[1] = 0
        engine.waiting[1] = 0
        await allocator.tick()
        assert _rows(pg_url)[1] == before[1], "a partition no longer ours was written"
    finally:
        await allocator.close()


async def test_a_failing_tick_is_logged_and_the_ticking_goes_on(caplog):
    engine = _Engine({0}, waiting=1)
    asked = 0
    real = engine.set_quotas

    async def counted(event: QuotasSet) -> QuotasUsed:
        nonlocal asked
        asked += 1
        return await real(event)

    engine.set_quotas = counted  # type: ignore[method-assign]
    allocator = _allocator("postgresql://nobody@127.0.0.1:1/none", engine, "a", {0: 1})
    caplog.set_level(logging.WARNING, "workflow_manager.cluster.quotas")
    ticking = asyncio.create_task(keep_quotas(allocator, 0.01))
    while asked < 3:
        await asyncio.sleep(0.01)
    ticking.cancel()
    await asyncio.gather(ticking, return_exceptions=True)
    warnings = [r for r in caplog.records if "quotas not updated" in r.getMessage()]
    assert len(warnings) == 1, "a warning per failing tick, or none"


def test_only_workflows_with_a_shared_limit_need_the_allocator():
    plain = parse_workflows("workflows:\n  - name: a\n    steps: [{name: s}]\n")
    limited = parse_workflows("workflows:\n  - name: a\n    steps: [{name: s, concurrency: 2}]\n")
    rated = parse_workflows(
        "workflows:\n  - name: a\n    steps: [{name: s, rate: {limit: 5, per: 1}}]\n"
    )
    job_rated = parse_workflows(
        "workflows:\n  - name: a\n    rate: {limit: 5, per: 1}\n    steps: [{name: s}]\n"
    )
    settings = ManagerSettings()
    assert uses_shared_limits(job_rated.values(), settings)
    assert not uses_shared_limits(plain.values(), settings)
    assert uses_shared_limits(limited.values(), settings)
    assert uses_shared_limits(rated.values(), settings)
    assert uses_shared_limits(plain.values(), ManagerSettings(max_running_jobs=4))
