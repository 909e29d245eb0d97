"""Python's cyclic garbage collector, set for a manager: most of what it allocates lives long.

A manager keeps many small objects for as long as their jobs run (jobs, steps, messages), and
the collector scans every survivor again as it ages. With Python's default thresholds it ran
~1,000 times replaying a 10,000-job journal and took a quarter of the CPU per step
(bench/README.md); `tune` raises them. Recovery builds the jobs in memory all at once and
creates no cycles to collect (replaying a 10,000-job journal through the engine leaves none):
`long_lived` keeps the collector out of it and freezes what it built, which saved 8% of the
replay's CPU.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["THRESHOLDS", "freeze", "long_lived", "tune"]

# Young objects per collection, then young collections per middle one, middle per full one.
THRESHOLDS = (50_000, 20, 100)


def tune() -> None:
    """Set the collector's thresholds for a manager (`THRESHOLDS`)."""
    gc.set_threshold(*THRESHOLDS)


def freeze() -> None:
    """Everything allocated so far lives as long as the process: no collection scans it again."""
    gc.freeze()


@contextmanager
def long_lived() -> Iterator[None]:
    """Objects made in the block live as long as the process: no collection runs while they are
    made, and they are frozen after it (`gc.freeze`), so no later collection scans them.

    For recovery at a start only: garbage made in the block is frozen with them, never freed.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Frozen before the collector is back: otherwise its next young collection would scan
        # everything the block made, as it is all still counted young.
        gc.freeze()
        if enabled:
            gc.enable()
