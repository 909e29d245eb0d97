"""`pyworker exec QUEUE -- COMMAND [ARGS...]`: serve a step queue with any program."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
from collections.abc import Mapping, Sequence

from pyworker.cliopts import (
    add_common_options,
    add_payload_options,
    configure_logging,
    payload_options,
    run_reporting,
)
from pyworker.errors import SettingsError
from pyworker.execstep import ExecStep, resolve_command
from pyworker.settings import resolve_queue_prefix
from pyworker.worker import Worker

__all__ = ["build_exec_worker", "exec_main", "split_command"]

_STOP_GRACE_S = 30.0

USAGE = "pyworker exec QUEUE [options] -- COMMAND [ARGS...]"

HELP_EPILOG = """\
Each request runs COMMAND once (without a shell): the step input is written to its stdin as
one line of JSON; it must print the step output, a JSON object, on stdout (printing nothing
counts as {}). A non-zero exit fails the step with an x-error reply carrying the end of its
stderr; the manager then retries the step as its workflow says. The request's metadata is in
the environment: WM_JOB_ID, WM_STEP, WM_ATTEMPT, WM_WORKFLOW, WM_CORRELATION_ID.
With payload stores (--payload-store or $WM_PAYLOAD_STORES), references in the input are
resolved before COMMAND runs, and a large output's values are stored and sent as references.

examples:
  pyworker exec segment-word-counts -- examples/exec/word-count.sh
  pyworker exec resize --concurrency 4 --timeout 60 -- ./resize.sh --width 800
  pyworker exec score -- Rscript score.R
  QUEUE=echo pyworker exec "$QUEUE" -- examples/exec/echo.sh

A step script in three lines (reads {"name": ...}, prints {"greeting": ...}):
  #!/bin/sh
  name=$(jq -r .name)
  printf '{"greeting": "hello %s"}\\n' "$name"

The broker URL is --amqp-url, else $AMQP_URL, else $AMQP_SERVER, else
amqp://guest:guest@localhost:5672/. The queue is declared durable, as the manager does.

exit codes:
  0  stopped by SIGINT/SIGTERM (running commands finished and were answered)
  1  RabbitMQ unreachable or refused a declaration
  2  bad arguments or COMMAND not found
"""


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyworker exec",
        usage=USAGE,
        description="Serve a step queue with any program: JSON in on stdin, JSON out on stdout.",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("queue", metavar="QUEUE", help="the step's queue (its name or `queue:`)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="N",
        help="commands run at once (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="kill a command (and its children) running longer; default: no limit",
    )
    parser.add_argument("--amqp-url", metavar="URL", help="RabbitMQ URL (default: $AMQP_URL)")
    add_common_options(parser, "the queue name")
    add_payload_options(parser)
    return parser


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """`(options, command)`: the arguments before the first `--` and those after it."""
    args = list(argv)
    if "--" not in args:
        return args, []
    at = args.index("--")
    return args[:at], args[at + 1 :]


def build_exec_worker(
    args: argparse.Namespace, command: Sequence[str], environ: Mapping[str, str]
) -> Worker:
    """A Worker serving `args.queue` with an ExecStep for `command`; SettingsError if invalid."""
    if args.concurrency < 1:
        raise SettingsError(f"--concurrency must be 1 or more, got {args.concurrency}")
    step = ExecStep(resolve_command(command, environ), timeout_s=args.timeout, environ=environ)
    # On SIGTERM, running commands get their whole timeout to finish before being killed.
    stop_timeout_s = max(_STOP_GRACE_S, (args.timeout or 0) + 5)
    worker = Worker(
        args.amqp_url,
        prefetch=args.concurrency,
        name=f"pyworker exec {args.queue} pid={os.getpid()}",
        stop_timeout_s=stop_timeout_s,
        queue_prefix=args.queue_prefix,
        environ=environ,
        **payload_options(args),
    )
    worker.step(args.queue)(step)
    return worker


def exec_main(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """Run `pyworker exec` with `argv` (the arguments after `exec`); returns the exit code."""
    environ = os.environ if environ is None else environ
    parser = _parser()
    options, command = split_command(argv)
    args = parser.parse_args(options)
    if not command:
        parser.error(f"missing '-- COMMAND' after the options; usage: {USAGE}")
    configure_logging(args.log_level)

    def run() -> None:
        worker = build_exec_worker(args, command, environ)
        queue = resolve_queue_prefix(args.queue_prefix, environ) + args.queue

        def announce() -> None:
            print(f"pyworker exec: listening on {queue}: {' '.join(command)}", flush=True)

        asyncio.run(worker.serve(handle_signals=True, on_start=announce))

    return run_reporting("pyworker exec", run)
