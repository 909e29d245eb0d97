"""The scenarios: each runs the manager and the baseline on the same jobs and returns figures."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from bench.procs import broker_pid, cpu_s, memory_kb, reset_peak, thread_cpu_s
from bench.report import Figure, Target
from bench.runs import Batch, percentile, run_batch, run_one_by_one
from bench.session import ManagedRun, Session
from bench.shapes import linear_jobs, wordcount_jobs

__all__ = ["FULL", "QUICK", "Plan", "fan_out", "latency", "linear", "throughput", "warm_up"]

_US_PER_S = 1e6
_MB = 1e6
# Latency: jobs in a row on one side (manager or baseline) before the other's turn.
LATENCY_BLOCK = 20


@dataclass(frozen=True)
class Plan:
    """How big each scenario is."""

    throughput_jobs: int
    latency_samples: int
    fanout_sizes: tuple[int, ...]
    fanout_vs_baseline: int  # the fan-out whose time must be <= 1.5 x the baseline's
    fanout_scaling: tuple[int, int] | None  # (small, large): large must be <= 11 x small
    recovery_jobs: int
    linear_jobs: int
    warmup_jobs: int
    timeout_s: float
    fork_children: int = 10_000  # the fork scenario's source job: its children, 10 failed
    bulk_jobs: int = 100_000  # the bulk scenario's running jobs, cancelled in one bulk action
    fairness_children: int = 100_000  # the fairness scenario's tenant A: its waiting children
    reduce_children: int = 100_000  # the reduce scenario's job: its children, reduced
    rate_jobs: int = 2500  # the rate scenario's backlog: more than its window lets go
    rate_seconds: float = 20.0  # the rate scenario's measured interval (after its first 1 s)


FULL = Plan(
    throughput_jobs=1000,
    latency_samples=200,
    fanout_sizes=(1000, 10_000, 100_000),
    fanout_vs_baseline=10_000,
    fanout_scaling=(10_000, 100_000),
    recovery_jobs=10_000,
    linear_jobs=500,
    warmup_jobs=50,
    timeout_s=300,
)
QUICK = Plan(
    throughput_jobs=50,
    latency_samples=10,
    fanout_sizes=(200, 2000),
    fanout_vs_baseline=2000,
    fanout_scaling=None,
    recovery_jobs=500,
    linear_jobs=20,
    warmup_jobs=10,
    timeout_s=60,
    fork_children=2000,
    bulk_jobs=5000,
    fairness_children=5000,
    reduce_children=5000,
    rate_jobs=800,
    rate_seconds=5.0,
)


async def warm_up(session: Session, run: ManagedRun, plan: Plan) -> None:
    """A few jobs through both, so connections, code paths and caches are warm."""
    await run_batch(run.driver, wordcount_jobs(plan.warmup_jobs), plan.timeout_s)
    driver = await session.baseline()
    with session.driving_baseline():
        await run_batch(driver, wordcount_jobs(plan.warmup_jobs), plan.timeout_s)


def _processes(session: Session, run: ManagedRun) -> dict[str, list[int]]:
    """The processes whose CPU a throughput run reads, by role."""
    broker = broker_pid()
    return {
        "manager": [run.process.pid],
        "workers": [worker.pid for worker in session.workers],
        "bench process (triggers / baseline driver)": [os.getpid()],
        **({"RabbitMQ (shared with anything else running)": [broker]} if broker else {}),
    }


def _cpu_by_role(processes: dict[str, list[int]]) -> dict[str, float]:
    return {role: sum(cpu_s(pid) for pid in pids) for role, pids in processes.items()}


def _spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before.get(key, 0.0) for key in after}


async def throughput(
    session: Session, run: ManagedRun, plan: Plan
) -> tuple[list[Figure], dict[str, Any]]:
    """N word-counts jobs at once: jobs/s, steps/s and the manager's CPU per step.

    Also returns where the CPU went (by process, and by manager thread) for the profile notes.
    """
    processes = _processes(session, run)
    cpu, threads = _cpu_by_role(processes), thread_cpu_s(run.process.pid)
    managed = await run_batch(run.driver, wordcount_jobs(plan.throughput_jobs), plan.timeout_s)
    between = _cpu_by_role(processes)
    managed_cpu = _spent(cpu, between)
    threads = _spent(threads, thread_cpu_s(run.process.pid))
    driver = await session.baseline()
    with session.driving_baseline():
        base = await run_batch(driver, wordcount_jobs(plan.throughput_jobs), plan.timeout_s)
    base_cpu = _spent(between, _cpu_by_role(processes))
    ratio = managed.jobs_per_s / base.jobs_per_s
    label = f"throughput, {plan.throughput_jobs:,} word-counts jobs"
    driver_role = "bench process (triggers / baseline driver)"
    # The targets are issue 25's: the manager at least as fast as the driver, for no more CPU.
    cpu_per_step = managed_cpu["manager"] / managed.steps * _US_PER_S
    base_cpu_per_step = base_cpu[driver_role] / base.steps * _US_PER_S
    figures = [
        Figure(label, managed.jobs_per_s, "jobs/s", base.jobs_per_s,
               Target(">= 1.0 x baseline", ratio >= 1.0)),
        Figure(f"{label}: steps", managed.steps_per_s, "steps/s", base.steps_per_s),
        Figure("manager CPU per step (throughput run)", cpu_per_step, "us/step",
               base_cpu_per_step, Target("<= 1.0 x baseline", cpu_per_step <= base_cpu_per_step),
               note="baseline: the driver's own CPU"),
        Figure("manager CPU per step: its event loop (main thread)",
               threads.get("main", 0.0) / managed.steps * _US_PER_S, "us/step",
               note="the rest: the journal's writer and the client's threads"),
    ]  # fmt: skip
    details = {
        "steps": managed.steps,
        "seconds": managed.seconds,
        "baseline_seconds": base.seconds,
        "cpu_s": managed_cpu["manager"],
        "threads_cpu_s": {k: v for k, v in sorted(threads.items(), key=lambda kv: -kv[1]) if v},
        "roles_us_per_step": {
            role: (
                managed_cpu[role] / managed.steps * _US_PER_S,
                base_cpu[role] / base.steps * _US_PER_S,
            )
            for role in processes
        },  # fmt: skip
    }
    return figures, details


async def latency(session: Session, run: ManagedRun, plan: Plan) -> list[Figure]:
    """One word-counts job at a time: p50 and p99 from trigger publish to outcome message.

    The manager's jobs and the baseline's take turns in blocks of `LATENCY_BLOCK`, so a machine
    that gets slower or faster during the run (anything else on it) weighs on both sides alike,
    not on whichever ran in that minute. The first job or two of a block share the machine with
    the other side's last commit and acks: the p50 does not see them.
    """
    driver = await session.baseline()
    n = plan.latency_samples
    managed_specs, base_specs = wordcount_jobs(n), wordcount_jobs(n)
    managed: list[float] = []
    base: list[float] = []
    for start in range(0, n, LATENCY_BLOCK):
        block = slice(start, start + LATENCY_BLOCK)
        batch = await run_one_by_one(run.driver, managed_specs[block], plan.timeout_s)
        managed += batch.latencies_s
        with session.driving_baseline():
            batch = await run_one_by_one(driver, base_specs[block], plan.timeout_s)
        base += batch.latencies_s
    ms = 1000.0
    p50, base_p50 = percentile(managed, 50), percentile(base, 50)
    p99, base_p99 = percentile(managed, 99), percentile(base, 99)
    label = f"latency, {plan.latency_samples} jobs one at a time"
    return [
        Figure(f"{label}: p50", p50 * ms, "ms", base_p50 * ms,
               Target("<= 1.2 x baseline", p50 <= 1.2 * base_p50)),
        Figure(f"{label}: p99", p99 * ms, "ms", base_p99 * ms),
    ]  # fmt: skip


async def linear(session: Session, run: ManagedRun, plan: Plan) -> list[Figure]:
    """N jobs of a 13-step chain at once: completed jobs/s."""
    managed = await run_batch(run.driver, linear_jobs(plan.linear_jobs), plan.timeout_s)
    driver = await session.baseline()
    with session.driving_baseline():
        base = await run_batch(driver, linear_jobs(plan.linear_jobs), plan.timeout_s)
    label = f"13-step linear, {plan.linear_jobs:,} jobs"
    return [Figure(label, managed.jobs_per_s, "jobs/s", base.jobs_per_s)]


@dataclass(frozen=True)
class FanOut:
    """One fan-out measured on a fresh manager."""

    children: int
    batch: Batch
    idle_kb: int
    peak_kb: int
    journal_bytes: int

    @property
    def growth_per_child_b(self) -> float:
        return (self.peak_kb - self.idle_kb) * 1024 / self.children


def _fan_out_timeout_s(plan: Plan, children: int) -> float:
    """Long enough for a slow machine: at least 100 children a second."""
    return max(plan.timeout_s, children / 100)


async def _fan_out_manager(session: Session, children: int, plan: Plan) -> FanOut:
    async with session.manager() as run:
        await run_batch(run.driver, wordcount_jobs(1), plan.timeout_s)  # warm: imports, caches
        pid = run.process.pid
        reset_peak(pid)
        idle_kb = memory_kb(pid, "VmRSS")
        batch = await run_batch(
            run.driver, wordcount_jobs(1, children), _fan_out_timeout_s(plan, children)
        )
        peak_kb = memory_kb(pid, "VmHWM")
    journal = session.journals.size_bytes(run.db)
    return FanOut(children, batch, idle_kb, peak_kb, journal)


async def _fan_out_baseline(session: Session, children: int, plan: Plan) -> FanOut:
    driver = await session.baseline()
    own = reset_peak("self")
    idle_kb = memory_kb("self", "VmRSS")
    with session.driving_baseline():
        timeout_s = _fan_out_timeout_s(plan, children)
        batch = await run_batch(driver, wordcount_jobs(1, children), timeout_s)
    peak_kb = memory_kb("self", "VmHWM") if own else idle_kb
    return FanOut(children, batch, idle_kb, peak_kb, 0)


async def fan_out(session: Session, plan: Plan) -> AsyncIterator[list[Figure]]:
    """One job with N children, for each N: time, manager peak RSS and growth, journal size.

    Yields the figures of each N as soon as they are measured.
    """
    measured: dict[int, tuple[FanOut, FanOut]] = {}
    for children in plan.fanout_sizes:
        managed = await _fan_out_manager(session, children, plan)
        base = await _fan_out_baseline(session, children, plan)
        measured[children] = (managed, base)
        yield _fan_out_figures(plan, measured, children)


def _time_target(plan: Plan, measured: dict[int, tuple[FanOut, FanOut]], n: int) -> Target | None:
    managed, base = measured[n]
    if n == plan.fanout_vs_baseline:
        return Target("<= 1.0 x baseline", managed.batch.seconds <= base.batch.seconds)
    if plan.fanout_scaling and n == plan.fanout_scaling[1]:
        small = measured[plan.fanout_scaling[0]][0].batch.seconds
        return Target(
            f"<= 11 x the {plan.fanout_scaling[0]:,} time ({11 * small:.1f} s)",
            managed.batch.seconds <= 11 * small,
        )
    return None


def _fan_out_figures(
    plan: Plan, measured: dict[int, tuple[FanOut, FanOut]], n: int
) -> list[Figure]:
    managed, base = measured[n]
    label = f"fan-out, {n:,} children"
    growth_target = None
    if n == max(plan.fanout_sizes):
        growth_target = Target("<= 1,024 B/child", managed.growth_per_child_b <= 1024)
    return [
        Figure(f"{label}: time", managed.batch.seconds, "s", base.batch.seconds,
               _time_target(plan, measured, n)),
        Figure(f"{label}: manager peak RSS", managed.peak_kb * 1024 / _MB, "MB",
               note=f"{managed.idle_kb * 1024 / _MB:.1f} MB idle before the job"),
        Figure(f"{label}: RSS growth per child", managed.growth_per_child_b, "B/child",
               base.growth_per_child_b, growth_target, note="baseline: the driver's process"),
        Figure(f"{label}: journal size", managed.journal_bytes / _MB, "MB",
               note=f"{managed.journal_bytes / n:,.0f} B/child"),
    ]  # fmt: skip
