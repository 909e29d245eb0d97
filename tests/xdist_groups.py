"""Tests that must not run beside one another under pytest-xdist, and the scheduler that keeps
them on one worker, one after the other (scripts/test.sh: `-n 2 --dist loadgroup`).

xdist's own `--dist loadgroup` reads `xdist_group` marks, but xdist 3.8 marks a test's group by
rewriting `item._nodeid`, which pytest 9 no longer reads: the marks are silently ignored. So the
groups are named here, by node id, and tests/conftest.py gives xdist this scheduler instead:
its `loadgroup` scheduling with the group of a test taken from ONE_AT_A_TIME.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling

ONE_AT_A_TIME = "cpu-heavy-or-timed"
# The benchmarks keep both cores busy (one pins RabbitMQ to a core); the others measure a rate
# or a hand-over against the clock, the first two over a minute, or run three managers at full
# speed. One worker runs them in turn while the other runs the rest of the suite beside them.
ONE_AT_A_TIME_TESTS = (
    "tests/integration/test_bench.py::",
    "tests/integration/control/test_step_rate_precision.py::",
    "tests/integration/cluster/test_cluster_limits.py::",
    "tests/integration/cluster/test_bulk_cluster.py::",
    "tests/integration/cluster/test_three_managers.py::",
)


def group_of(nodeid: str, tests: tuple[str, ...] = ONE_AT_A_TIME_TESTS) -> str | None:
    """The group of the test `nodeid`, or None when it may run beside any other."""
    return ONE_AT_A_TIME if nodeid.startswith(tests) else None


class GroupScheduling(LoadGroupScheduling):
    """xdist's loadgroup scheduling, with the groups of `tests` (ONE_AT_A_TIME_TESTS): each
    group is one unit of work, so one worker runs it whole; every other test is a unit of its
    own. The units go out largest first (xdist's default), so the group starts at once."""

    tests: tuple[str, ...] = ONE_AT_A_TIME_TESTS

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid, self.tests) or super()._split_scope(nodeid)
