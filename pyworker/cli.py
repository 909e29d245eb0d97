"""`pyworker MODULE:OBJECT`: run a Worker until SIGINT/SIGTERM; `pyworker exec`: execcli."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pyworker.cliopts import (
    EXIT_BROKER,
    EXIT_OK,
    EXIT_USAGE,
    add_common_options,
    add_payload_options,
    configure_logging,
    payload_options,
    run_reporting,
)
from pyworker.execcli import exec_main
from pyworker.loader import load_target

__all__ = ["main", "EXIT_OK", "EXIT_BROKER", "EXIT_USAGE"]


HELP_EPILOG = """\
MODULE is a dotted module name (importable from the current directory) or a path to
a .py file (its directory is importable, so it can import its sibling modules).

To serve a step with any program instead (JSON on stdin, JSON on stdout), see
`pyworker exec --help`: pyworker exec QUEUE [options] -- COMMAND [ARGS...]

examples:
  pyworker examples/word-counts/workers.py:worker
  pyworker mypackage.workers:worker --prefetch 4 --log-level DEBUG
  AMQP_URL=amqp://user:pass@rabbit:5672/ pyworker mypackage.workers:worker
  pyworker examples/word-counts/workers.py:worker --queue-prefix staging.
  pyworker examples/echo/echo.py:worker --payload-store main=file:///srv/wm-payloads
  pyworker exec segment-word-counts -- examples/exec/word-count.sh

The broker URL is --amqp-url, else the Worker's own amqp_url, else $AMQP_URL, else
$AMQP_SERVER, else amqp://guest:guest@localhost:5672/.

Payloads by reference: references in a request are resolved from the payload stores before
the handler runs; a reply larger than the threshold has its largest values stored in the first
store and sent as references. --payload-store flags replace the Worker's own and
$WM_PAYLOAD_STORES.

exit codes:
  0  stopped by SIGINT/SIGTERM (in-flight requests finished and replied)
  1  RabbitMQ unreachable or refused a declaration
  2  bad arguments, MODULE:OBJECT or settings
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyworker",
        description="Run a pyworker Worker: consume its step queues and reply to the manager.",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="MODULE:OBJECT", help="where the Worker object is")
    parser.add_argument("--amqp-url", metavar="URL", help="RabbitMQ URL (overrides the Worker's)")
    parser.add_argument(
        "--prefetch", type=int, metavar="N", help="requests handled at once per step queue"
    )
    add_common_options(parser, "every step queue name")
    add_payload_options(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv`, load the Worker and run it; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["exec"]:  # no MODULE:OBJECT target is named `exec` (it has no colon)
        return exec_main(argv[1:])
    args = _parser().parse_args(argv)
    configure_logging(args.log_level)
    # Console scripts do not put the current directory on sys.path; `python -m` does.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())

    def run() -> None:
        payloads = payload_options(args)
        worker = load_target(args.target)
        worker.configure(
            amqp_url=args.amqp_url,
            prefetch=args.prefetch,
            queue_prefix=args.queue_prefix,
            **payloads,
        )
        worker.run()

    return run_reporting("pyworker", run)
