"""`python -m bench`: run every scenario, print one line per figure, optionally update README."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.bulking import bulk
from bench.fairness import fairness
from bench.forking import fork
from bench.managers import managers
from bench.pinning import Cores, PinError, Pinner, choose_cores, pinned
from bench.procs import BenchError
from bench.profiling import Profile, Recorder, read_profile
from bench.readme import write_readme
from bench.recovering import recovery
from bench.reducing import reduce_scenario
from bench.report import Results, machine
from bench.runs import run_batch
from bench.scenarios import FULL, QUICK, Plan, fan_out, latency, linear, throughput, warm_up
from bench.session import BrokerUnreachable, ManagedRun, Session, SessionOptions
from bench.shapes import wordcount_jobs
from bench.throttling import rate_scenario
from workflow_manager.journal import is_postgres_url

__all__ = ["main"]

EXIT_OK = 0  # every figure measured (a missed target does not fail the run)
EXIT_ERROR = 1  # a job failed or timed out, or a process died: no figures
EXIT_USAGE = 2
EXIT_BROKER = 3  # RabbitMQ unreachable
SCENARIOS = ("throughput", "latency", "linear", "fanout", "recovery", "managers", "fork", "bulk")
OPT_IN = ("fairness", "reduce", "rate")  # run only when `--only` names them (not in a full run)

EPILOG = """\
examples:
  python -m bench --quick                      # a small run, well under a minute
  python -m bench --pin                        # the manager (or the baseline) on a core of its own
  python -m bench                              # the full run (a few minutes)
  python -m bench --write-readme --profile bench/profile   # full run, results into README
  python -m bench --db postgresql://postgres@127.0.0.1/postgres   # journals in PostgreSQL
  python -m bench --db postgresql://postgres@127.0.0.1/postgres --only managers --partitions 4
  python -m bench --only fork                  # fork a 10,000-children job from its task step
  python -m bench --only bulk                  # cancel 100,000 running jobs in one bulk action
  python -m bench --only fairness              # tenant B's first step while A has 100,000 waiting
  python -m bench --only reduce                # 100,000 children reduced as they finish
  python -m bench --only rate                  # how precisely a step's rate: 100 per 1 s holds

exit codes: 0 measured (missed targets are reported, not failed), 1 a job failed or timed
out, 2 bad arguments, 3 RabbitMQ unreachable
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark the workflow manager against a zero-overhead aio-pika driver, "
        "on the local RabbitMQ, with real manager and pyworker processes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="a much smaller run, for tests")
    parser.add_argument(
        "--write-readme", action="store_true", help="write the results into bench/README.md"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="also run the throughput scenario once more under py-spy, samples into DIR",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="give the measured process a core of its own (the first this process may use): "
        "every manager, and the bench process while it drives the baseline; RabbitMQ, the "
        "workers and the bench process as the manager's client share the other cores. "
        "Needs 2 cores or more; every mask is put back at the end",
    )
    parser.add_argument(
        "--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/", help="RabbitMQ URL"
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        type=_postgres_url,
        help="keep every manager's journal in this PostgreSQL database, each in a fresh schema "
        "(dropped at the end), instead of a fresh SQLite file",
    )
    parser.add_argument(
        "--partitions",
        type=_positive,
        default=4,
        metavar="P",
        help="the managers scenario's --partitions, for one manager and for two (default 4)",
    )
    parser.add_argument("--workers", type=int, default=1, help="pyworker processes (default 1)")
    parser.add_argument(
        "--worker-prefetch", type=int, default=100, help="worker prefetch per queue (default 100)"
    )
    parser.add_argument(
        "--only",
        type=_scenarios,
        default=SCENARIOS,
        metavar="LIST",
        help=f"comma-separated scenarios to run (default: all of {','.join(SCENARIOS)}; "
        f"only when named: {','.join(OPT_IN)})",
    )
    return parser


def _postgres_url(text: str) -> str:
    if not is_postgres_url(text):
        raise argparse.ArgumentTypeError(f"not a postgresql:// URL: {text!r}")
    return text


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def _scenarios(text: str) -> tuple[str, ...]:
    chosen = tuple(name.strip() for name in text.split(",") if name.strip())
    known = SCENARIOS + OPT_IN
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown scenario {', '.join(unknown) or text!r} (known: {', '.join(known)})"
        )
    return chosen


async def _profiled_throughput(run: ManagedRun, plan: Plan, directory: Path) -> Profile:
    directory.mkdir(parents=True, exist_ok=True)
    output = directory / "manager-throughput.txt"
    output.unlink(missing_ok=True)
    recorder = await Recorder.attach(run.process.pid, output)
    try:
        await run_batch(run.driver, wordcount_jobs(plan.throughput_jobs), plan.timeout_s)
    finally:
        await recorder.stop()
    return read_profile(output)


async def _managers(session: Session, plan: Plan, partitions: int, results: Results) -> None:
    """The managers scenario; skipped without --db."""
    if session.options.postgres_url is None:
        print("managers: skipped (several managers share a PostgreSQL journal: give --db)")
        return
    async for figures in managers(session, plan, partitions):
        results.add(figures)


async def _run(
    plan: Plan,
    options: SessionOptions,
    only: tuple[str, ...],
    profile_dir: Path | None,
    partitions: int,
    pinner: Pinner | None = None,
) -> Results:
    results = Results()
    async with Session(options, pinner) as session:
        print(f"queues: {session.prefix}* (deleted at the end)", flush=True)
        if {"throughput", "latency", "linear"} & set(only):
            async with session.manager() as run:
                await warm_up(session, run, plan)
                if "throughput" in only:
                    figures, results.throughput = await throughput(session, run, plan)
                    results.add(figures)
                if "latency" in only:
                    results.add(await latency(session, run, plan))
                if "linear" in only:
                    results.add(await linear(session, run, plan))
                if profile_dir is not None:
                    results.profile = await _profiled_throughput(run, plan, profile_dir)
        if "fanout" in only:
            async for figures in fan_out(session, plan):
                results.add(figures)
        if "recovery" in only:
            results.add(await recovery(session, plan.recovery_jobs))
        if "managers" in only:
            await _managers(session, plan, partitions, results)
        await _own_manager_scenarios(session, plan, only, results)
    return results


async def _own_manager_scenarios(
    session: Session, plan: Plan, only: tuple[str, ...], results: Results
) -> None:
    """The scenarios that start a manager on a workflow of their own: fork, bulk, fairness,
    reduce, rate."""
    if "fork" in only:
        results.add(await fork(session, plan.fork_children, plan.timeout_s))
    if "bulk" in only:
        results.add(await bulk(session, plan.bulk_jobs, plan.timeout_s))
    if "fairness" in only:
        results.add(await fairness(session, plan.fairness_children, plan.timeout_s))
    if "reduce" in only:
        results.add(await reduce_scenario(session, plan.reduce_children, plan.timeout_s))
    if "rate" in only:
        rate = await rate_scenario(session, plan.rate_jobs, plan.rate_seconds, plan.timeout_s)
        results.add(rate)


def _measure(
    plan: Plan, options: SessionOptions, args: argparse.Namespace, cores: Cores | None
) -> Results:
    """Run the scenarios, pinned for the whole run with --pin (every mask put back after)."""
    if cores is None:
        return asyncio.run(_run(plan, options, args.only, args.profile, args.partitions))
    with pinned(cores) as pinner:
        return asyncio.run(_run(plan, options, args.only, args.profile, args.partitions, pinner))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.profile is not None and not Recorder.available():
        print("python -m bench: --profile needs py-spy (pip install py-spy)", file=sys.stderr)
        return EXIT_USAGE
    if "managers" in args.only and args.only != SCENARIOS and args.db is None:
        print("python -m bench: --only managers needs --db postgresql://...", file=sys.stderr)
        return EXIT_USAGE
    cores: Cores | None = None
    if args.pin:
        try:
            cores = choose_cores(os.sched_getaffinity(0))
        except PinError as exc:
            print(f"python -m bench: {exc}", file=sys.stderr)
            return EXIT_USAGE
    plan = QUICK if args.quick else FULL
    options = SessionOptions(
        args.amqp_url, args.workers, args.worker_prefetch, postgres_url=args.db
    )
    where = machine()
    journals = "SQLite" if args.db is None else "PostgreSQL"
    print(f"workflow-manager benchmark ({'quick' if args.quick else 'full'} run, {journals} "
          f"journals): {where}")  # fmt: skip
    if cores is not None:
        print(cores.describe())
    load = os.getloadavg()[0]
    if load > 0.5:
        print(
            f"warning: load average {load:.1f} before the run: other processes compete for the CPU"
        )
    try:
        results = _measure(plan, options, args, cores)
    except BrokerUnreachable as exc:
        print(f"python -m bench: error: {exc}", file=sys.stderr)
        return EXIT_BROKER
    except BenchError as exc:
        print(f"python -m bench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    checked = [f for f in results.figures if f.target is not None]
    passed = sum(f.target.passed for f in checked if f.target)
    print(f"targets: {passed} of {len(checked)} met")
    if args.write_readme and args.db is not None:
        print("not writing the README: its results are SQLite's (drop --db)", file=sys.stderr)
    elif args.write_readme and args.only != SCENARIOS:
        print("not writing the README: it takes a run of every scenario", file=sys.stderr)
    elif args.write_readme:
        readme = Path(__file__).resolve().parent / "README.md"
        where = f"{where} (1-minute load average {load:.2f} at the start)"
        pinning = cores.describe() if cores is not None else None
        write_readme(readme, where, args.quick, results, pinning)
        print(f"wrote the results into {readme}")
    return EXIT_OK
