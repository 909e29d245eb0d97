"""One tick of the quota allocator decided (`cluster.quotaplan`): what is lowered, written,
deleted and raised, and the invariant over many ticks of several managers."""

from __future__ import annotations

import random

from workflow_manager.cluster.quotaplan import QuotaRow, lowered, plan
from workflow_manager.engine import Quota, QuotaUse

LIMIT = "step/wf:wf:fetch"


def _use(partition: int, quota: int, used: int, waiting: int, of: int = 3) -> QuotaUse:
    return QuotaUse(LIMIT, partition, of, quota, used, waiting)


def _rows(*rows: tuple[int, int, int, int]) -> dict[str, dict[int, QuotaRow]]:
    return {LIMIT: {p: QuotaRow(LIMIT, p, q, w, u) for p, q, w, u in rows}}


def test_a_first_tick_grants_the_fair_part_the_other_rows_leave():
    decided = plan({}, [_use(0, 0, 0, 5), _use(1, 0, 0, 5)], {0, 1})
    assert decided.rows == (QuotaRow(LIMIT, 0, 2, 3, 0), QuotaRow(LIMIT, 1, 1, 3, 0))
    assert decided.raised == (Quota(LIMIT, 0, 2), Quota(LIMIT, 1, 1))


def test_a_raise_takes_no_more_than_the_other_rows_leave():
    # Partition 4 (another manager's) holds 3 of 3: ours waits with 0, its want written.
    decided = plan(_rows((4, 3, 3, 3)), [_use(0, 0, 0, 5)], {0})
    assert decided.rows == (QuotaRow(LIMIT, 0, 0, 3, 0),)
    assert decided.raised == ()
    # Once it is down to its fair part (2 of 3 between two wanting), ours gets the rest.
    decided = plan(_rows((4, 2, 3, 2)), [_use(0, 0, 0, 5)], {0})
    assert decided.rows == (QuotaRow(LIMIT, 0, 1, 3, 0),)
    assert decided.raised == (Quota(LIMIT, 0, 1),)


def test_a_quota_above_the_fair_part_is_lowered_and_never_below_the_use_in_the_row():
    table = _rows((0, 3, 3, 3), (4, 0, 3, 0))
    assert lowered(table, [_use(0, 3, 3, 4)], {0}) == (Quota(LIMIT, 0, 2),)
    # The engine kept 3 in use: the row says so, and no one else gets more than 0.
    decided = plan(table, [_use(0, 3, 3, 4)], {0})
    assert decided.rows == (QuotaRow(LIMIT, 0, 3, 3, 3),)


def test_an_adopted_partition_writes_its_use_when_its_engine_has_no_quota_yet():
    # Taken over from a dead manager: its jobs hold 2, the engine has been granted nothing.
    decided = plan(_rows((1, 2, 2, 2)), [_use(1, 0, 2, 0)], {1})
    assert decided.rows[0].quota == 2
    assert decided.raised == (Quota(LIMIT, 1, 2),)


def test_idle_rows_and_rows_of_limits_no_longer_used_go_and_others_rows_stay():
    table = _rows((0, 1, 1, 0), (1, 2, 2, 2), (5, 1, 1, 1))
    table["jobs/all"] = {0: QuotaRow("jobs/all", 0, 4, 4, 4), 5: QuotaRow("jobs/all", 5, 1, 1, 1)}
    decided = plan(table, [_use(0, 1, 0, 0), _use(1, 2, 2, 0)], {0, 1})
    # Partition 0 wants nothing but its engine may still use 1: its row stays until lowered.
    assert decided.rows == (QuotaRow(LIMIT, 0, 1, 0, 0), QuotaRow(LIMIT, 1, 2, 2, 2))
    assert decided.deleted == (("jobs/all", 0),)
    decided = plan(table, [_use(0, 0, 0, 0), _use(1, 2, 2, 0)], {0, 1})
    assert decided.deleted == ((LIMIT, 0), ("jobs/all", 0))


def test_partitions_not_ours_are_neither_written_nor_deleted():
    decided = plan(_rows((2, 1, 1, 1)), [_use(2, 1, 0, 0)], {0})
    assert decided.rows == () and decided.deleted == () and decided.raised == ()


class _Engine:
    """A manager's engine as the allocator sees it: a quota per partition, as set (the use
    may stay above a lowered one until work ends); work starts only below the quota."""

    def __init__(self, partitions: set[int]) -> None:
        self.partitions = partitions
        self.quota = dict.fromkeys(partitions, 0)
        self.used = dict.fromkeys(partitions, 0)
        self.waiting = dict.fromkeys(partitions, 0)

    def set(self, quotas: tuple[Quota, ...]) -> None:
        for quota in quotas:
            self.quota[quota.partition] = quota.quota
        self.run()

    def run(self) -> None:
        for p in self.partitions:
            while self.waiting[p] and self.used[p] < self.quota[p]:
                self.waiting[p] -= 1
                self.used[p] += 1

    def uses(self, of: int) -> list[QuotaUse]:
        return [
            QuotaUse(LIMIT, p, of, self.quota[p], self.used[p], self.waiting[p])
            for p in sorted(self.partitions)
            if self.quota[p] or self.used[p] or self.waiting[p]
        ]


def test_over_many_ticks_of_three_managers_the_limit_holds_and_is_used():
    rng = random.Random(7)
    of = 5
    engines = [_Engine({0, 1}), _Engine({2, 3}), _Engine({4, 5})]
    table: dict[int, QuotaRow] = {}
    last: list[dict[str, dict[int, QuotaRow]]] = [{}, {}, {}]
    full = 0
    served = dict.fromkeys(range(6), 0)
    for tick in range(3000):
        for engine in engines:  # work arrives, work ends
            for p in engine.partitions:
                engine.waiting[p] += rng.random() < 0.3
                if engine.used[p] and rng.random() < 0.3:
                    engine.used[p] -= 1
            engine.run()
        i = rng.randrange(3)
        engine = engines[i]
        turn = tick // 15  # the allocator's turn moves on with time
        engine.set(lowered(last[i], engine.uses(of), engine.partitions, turn))
        decided = plan({LIMIT: dict(table)}, engine.uses(of), engine.partitions, turn)
        for row in decided.rows:
            table[row.partition] = row
        for _, p in decided.deleted:
            del table[p]
        last[i] = {LIMIT: dict(table)}
        engine.set(decided.raised)
        assert sum(row.quota for row in table.values()) <= of
        for e in engines:
            for p in e.partitions:
                row = table[p].quota if p in table else 0
                assert e.used[p] <= row and e.quota[p] <= row
        full += sum(sum(e.used.values()) for e in engines) == of
        for e in engines:
            for p in e.partitions:
                served[p] += e.used[p] > 0
    assert full > 1000, "the limit was seldom used whole"
    # Fair: a partition with a backlog gives its quota back as its work ends (six partitions
    # want more than 5 between them), so each of them runs work for a good part of the time.
    assert min(served.values()) > 1000, served
