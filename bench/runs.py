"""Running jobs through a driver and checking every result: the timing core of each scenario."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bench.procs import BenchError
from bench.shapes import JobSpec

__all__ = ["Batch", "Driver", "percentile", "run_batch", "run_one_by_one"]


class Driver(Protocol):
    """Runs one job to its end and returns its result (the manager, or the baseline)."""

    async def run(self, spec: JobSpec) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Batch:
    """Jobs run to completion: how long it took, and each job's own time."""

    seconds: float
    completed: int
    steps: int
    latencies_s: list[float]

    @property
    def jobs_per_s(self) -> float:
        return self.completed / self.seconds

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds


async def _timed(driver: Driver, spec: JobSpec) -> float:
    started = time.perf_counter()
    result = await driver.run(spec)
    elapsed = time.perf_counter() - started
    if result != spec.expected:
        raise BenchError(f"job {spec.job_id}: result {result!r}, expected {spec.expected!r}")
    return elapsed


async def run_batch(driver: Driver, specs: Sequence[JobSpec], timeout_s: float) -> Batch:
    """Start every job at once; returns when each has completed with its expected result."""
    started = time.perf_counter()
    try:
        latencies = await asyncio.wait_for(
            asyncio.gather(*(_timed(driver, spec) for spec in specs)), timeout_s
        )
    except TimeoutError:
        raise BenchError(f"{len(specs)} jobs did not all complete in {timeout_s:.0f}s") from None
    seconds = time.perf_counter() - started
    return Batch(seconds, len(latencies), sum(spec.steps for spec in specs), latencies)


async def run_one_by_one(driver: Driver, specs: Sequence[JobSpec], timeout_s: float) -> Batch:
    """Run the jobs one at a time (each starts when the previous one has completed)."""
    started = time.perf_counter()
    latencies = []
    for spec in specs:
        try:
            latencies.append(await asyncio.wait_for(_timed(driver, spec), timeout_s))
        except TimeoutError:
            raise BenchError(f"job {spec.job_id} did not complete in {timeout_s:.0f}s") from None
    seconds = time.perf_counter() - started
    return Batch(seconds, len(latencies), sum(spec.steps for spec in specs), latencies)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile `q` (0-100) of `values`."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
