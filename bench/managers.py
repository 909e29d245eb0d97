"""One manager against two: the throughput workload on a PostgreSQL journal with P partitions,
through one manager and then through two sharing a fresh journal, with the same workers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.procs import BenchError, cpu_s, pids_named
from bench.report import Figure
from bench.runs import Batch, run_batch
from bench.scenarios import Plan
from bench.session import ManagedRun, Session
from bench.shapes import wordcount_jobs

__all__ = ["BALANCE_TIMEOUT_S", "managers", "wait_for_balance"]

# Issue 16 promises a balanced split within 10 s of a manager joining; this leaves room.
BALANCE_TIMEOUT_S = 30.0
_US_PER_S = 1e6


@dataclass(frozen=True)
class ClusterThroughput:
    """The throughput workload through some managers: the batch and where the CPU went."""

    batch: Batch
    cpu_s: list[float]  # each manager's user + system CPU over the batch
    machine_busy: float  # the share of every core's time spent busy over the batch
    cores_by_role: dict[str, float]  # cores each kind of process kept busy over the batch

    @property
    def cpu_per_step_us(self) -> float:
        """All managers' CPU together, per step."""
        return sum(self.cpu_s) / self.batch.steps * _US_PER_S

    def cores(self) -> str:
        """Each manager's CPU as a share of one core, e.g. `84%, 80% of a core`."""
        shares = ", ".join(f"{used / self.batch.seconds:.0%}" for used in self.cpu_s)
        return f"{shares} of a core"

    def machine(self) -> str:
        """How busy the machine was and who kept it busy, in cores."""
        roles = ", ".join(f"{role} {used:.2f}" for role, used in self.cores_by_role.items())
        return f"machine {self.machine_busy:.0%} busy; cores: {roles}"


def _split(body: dict[str, Any]) -> dict[str, list[int]]:
    return {entry["name"]: sorted(entry["partitions"]) for entry in body.get("managers", [])}


def _balanced(held: dict[str, list[int]], count: int, partitions: int) -> bool:
    """Every partition held, by `count` managers holding ⌊P/M⌋ or ⌈P/M⌉ each (a standby, with
    none, is listed by some manager builds and not by others)."""
    owned = sorted(p for ps in held.values() for p in ps)
    low, high = partitions // count, -(-partitions // count)
    holding = [ps for ps in held.values() if ps]
    sizes_ok = all(low <= len(ps) <= high for ps in holding)
    return len(holding) == min(count, partitions) and owned == list(range(partitions)) and sizes_ok


async def wait_for_balance(
    run: ManagedRun, partitions: int, timeout_s: float = BALANCE_TIMEOUT_S
) -> dict[str, list[int]]:
    """Poll the first manager's GET /api/cluster until the managers split the partitions evenly;
    their partitions by manager, or BenchError naming what the lease table said."""
    count = len(run.processes)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    held: dict[str, list[int]] = {}
    async with httpx.AsyncClient(base_url=run.process.api_url, timeout=5.0) as client:
        while True:
            try:
                response = await client.get("/api/cluster")
                response.raise_for_status()
                held = _split(response.json())
            except httpx.HTTPError as exc:
                raise BenchError(f"GET {run.process.api_url}/api/cluster: {exc}") from exc
            if _balanced(held, count, partitions):
                return held
            if loop.time() > deadline:
                raise BenchError(_unbalanced(held, count, partitions, timeout_s))
            await asyncio.sleep(0.2)


def _unbalanced(held: dict[str, list[int]], count: int, partitions: int, timeout_s: float) -> str:
    seen = "; ".join(f"{name} holds {ps or 'none'}" for name, ps in held.items()) or "no lease"
    message = (
        f"{count} managers with --partitions {partitions}: the partitions were not split between "
        f"them after {timeout_s:.0f}s (GET /api/cluster: {seen})"
    )
    if count > 1 and sum(1 for ps in held.values() if ps) < min(count, partitions):
        message += (
            "; a manager holding none is a standby: this manager build does not hand partitions "
            "over to a manager that joins (balancing), so two managers cannot be compared"
        )
    return message


def _machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, every core (/proc/stat)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def _roles(session: Session, run: ManagedRun) -> dict[str, list[int]]:
    """The processes whose CPU the scenario reads, by role (RabbitMQ and PostgreSQL serve
    anything else running on the machine too)."""
    return {
        "managers": [process.pid for process in run.processes],
        "workers": [worker.pid for worker in session.workers],
        "RabbitMQ": pids_named("beam.smp"),
        "PostgreSQL": pids_named("postgres"),
        "bench": [os.getpid()],
    }


def _cpu_by_pid(roles: dict[str, list[int]]) -> dict[int, float]:
    spent = {}
    for pid in (pid for pids in roles.values() for pid in pids):
        try:
            spent[pid] = cpu_s(pid)
        except OSError:
            continue  # it ended (a PostgreSQL backend whose connection closed)
    return spent


async def _measure(
    session: Session, plan: Plan, count: int, partitions: int | None
) -> ClusterThroughput:
    """The throughput workload through `count` managers on a fresh journal: PostgreSQL with
    `partitions`, or SQLite without."""
    async with session.manager(count, partitions, sqlite=partitions is None) as run:
        if partitions is not None:
            await wait_for_balance(run, partitions)
        await run_batch(run.driver, wordcount_jobs(plan.warmup_jobs), plan.timeout_s)
        before, busy_before = _cpu_by_pid(_roles(session, run)), _machine_busy_s()
        batch = await run_batch(run.driver, wordcount_jobs(plan.throughput_jobs), plan.timeout_s)
        roles = _roles(session, run)  # PostgreSQL backends started during the batch too
        after, busy_after = _cpu_by_pid(roles), _machine_busy_s()
    spent = {pid: used - before.get(pid, 0.0) for pid, used in after.items()}
    busy = (busy_after[0] - busy_before[0]) / max(busy_after[1] - busy_before[1], 1e-9)
    cores = {
        role: sum(spent.get(pid, 0.0) for pid in pids) / batch.seconds
        for role, pids in roles.items()
    }
    managers_s = [spent.get(process.pid, 0.0) for process in run.processes]
    return ClusterThroughput(batch, managers_s, busy, cores)


def _figures(
    label: str, measured: ClusterThroughput, against: ClusterThroughput | None, versus: str
) -> list[Figure]:
    """jobs/s and CPU per step of `measured`, with `against`'s as their baseline."""
    base = f"baseline: {versus}; " if against else ""
    return [
        Figure(label, measured.batch.jobs_per_s, "jobs/s",
               against.batch.jobs_per_s if against else None,
               note=f"{base}{measured.machine()}"),
        Figure(f"{label}: CPU per step", measured.cpu_per_step_us, "us/step",
               against.cpu_per_step_us if against else None,
               note=f"{base}{measured.cores()}"),
    ]  # fmt: skip


async def managers(session: Session, plan: Plan, partitions: int) -> AsyncIterator[list[Figure]]:
    """The throughput workload through one manager on SQLite, one on PostgreSQL with
    `partitions` partitions, and two sharing a PostgreSQL journal, each on a fresh journal;
    yields each one's figures as soon as they are measured."""
    jobs = f"{plan.throughput_jobs:,} jobs"
    sqlite = await _measure(session, plan, 1, None)
    yield _figures(f"{jobs}, one manager, SQLite", sqlite, None, "")
    one = await _measure(session, plan, 1, partitions)
    yield _figures(f"{jobs}, one manager, PostgreSQL P={partitions}", one, sqlite, "one on SQLite")
    two = await _measure(session, plan, 2, partitions)
    yield _figures(
        f"{jobs}, two managers, PostgreSQL P={partitions}", two, one, "one on PostgreSQL"
    )
