"""`python -m tests.integration.benchsmall ARGS`: `python -m bench --quick ARGS` with every
scenario smaller still, for test_bench.py.

The same code runs (bench/cli.py's `main`, every scenario, the same manager, worker and broker
processes) and prints the same lines; only the sizes shrink, to a third of the quick run's
time. Each size still reaches what the scenario exercises: two fan-out sizes, 10 failed
children among a fork's, a bulk cancel of more than one 1,000-job slice, a recovery with
running jobs. `python -m bench --quick` itself stays tested (the pinned run).
"""

from __future__ import annotations

import dataclasses
import sys

from bench import cli

SMALL = dataclasses.replace(
    cli.QUICK,
    throughput_jobs=20,
    latency_samples=5,
    fanout_sizes=(50, 500),
    fanout_vs_baseline=500,
    recovery_jobs=100,
    linear_jobs=10,
    warmup_jobs=5,
    fork_children=200,
    bulk_jobs=1500,
)


def main() -> int:
    """Run the benchmark's `--quick` path on the SMALL plan; its exit code."""
    cli.QUICK = SMALL  # the plan `--quick` picks, read by `main` at each run
    return cli.main(["--quick", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
