"""`workflow-manager test` and `workflow-manager replay`: their parsers and commands, kept apart
from workflow_manager.cli as the bridge's are."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from workflow_manager.errors import ManagerError

__all__ = ["add_testing_parsers", "test_command", "replay_command"]

_OK, _FAILED, _USAGE = 0, 1, 2

TEST_EPILOG = """\
The fixtures file (YAML or JSON) names the job, each step's answers (one per attempt) and
what to expect; see workflow_manager.testing.fixtures or the docs' "Testing workflows".
No broker, no manager, no waiting: time is virtual. Exit 0 when every expectation holds,
1 when one does not (each is printed), 2 for a bad workflow or fixtures file."""

REPLAY_EPILOG = """\
Runs the job's journaled events (its submission, replies, timers, signals, cancel and retry
requests) through the engine again and compares what it decides (the requests it sends, how
the job ends) with what the journal recorded. With --config, under that file's definition of
the workflow: is the change safe for jobs in flight? Exit 0 when the run is the same, 1 when
it diverges (the first event that decides differently is shown), 2 for bad arguments."""


def add_testing_parsers(commands: Any, db_default: str) -> None:
    """Add the `test` and `replay` subcommands to the command line's subparsers."""
    test = commands.add_parser(
        "test",
        help="run a workflow in-process against fixtures (no broker, virtual time)",
        description="Run a workflow file's job in-process, its steps answered from a fixtures "
        "file, and check the expectations the file states.",
        epilog=TEST_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    test.add_argument("file", help="the workflow YAML file")
    test.add_argument("--fixtures", required=True, help="the fixtures file (YAML or JSON)")
    replay = commands.add_parser(
        "replay",
        help="replay a job's journal through the engine: is a definition change safe?",
        description="Replay a job's journaled events through today's engine.",
        epilog=REPLAY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("--db", default=db_default, help=f"the journal (default: {db_default})")
    replay.add_argument("--job", required=True, help="the job's id (a child's names its tree)")
    replay.add_argument("--config", help="a workflow file to replay under (default: as it ran)")


def test_command(args: argparse.Namespace) -> int:
    """Run `workflow-manager test`; the exit code."""
    from workflow_manager.testing.fixtures import check, load_fixtures, run_fixtures, run_table
    from workflow_manager.testing.simulation import Simulation

    try:
        sim = Simulation.load(args.file)
        fixtures = load_fixtures(args.fixtures)
        job = asyncio.run(run_fixtures(sim, fixtures))
    except ManagerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return _USAGE
    print(run_table(sim.jobs))
    problems = check(job, fixtures.expect)
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"OK: job {job.id} {job.status}")
    return _FAILED if problems else _OK


def replay_command(args: argparse.Namespace) -> int:
    """Run `workflow-manager replay`; the exit code."""
    from workflow_manager.journal import is_postgres_url
    from workflow_manager.testing.replaying import replay_job

    if not is_postgres_url(args.db) and not os.path.exists(args.db):
        print(f"error: no journal at {args.db} (use --db)", file=sys.stderr)
        return _USAGE
    config = Path(args.config) if args.config else None
    try:
        report = asyncio.run(replay_job(args.db, args.job, config))
    except ManagerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return _USAGE
    print(report.text())
    return _OK if report.same else _FAILED
