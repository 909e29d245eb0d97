"""What both pyworker commands share: exit codes, common options, logging, error reporting."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from pyworker.errors import BrokerError, PyworkerError

__all__ = [
    "EXIT_OK",
    "EXIT_BROKER",
    "EXIT_USAGE",
    "add_common_options",
    "configure_logging",
    "run_reporting",
]

EXIT_OK = 0  # stopped by SIGINT/SIGTERM after finishing in-flight requests
EXIT_BROKER = 1  # RabbitMQ unreachable or refused a declaration
EXIT_USAGE = 2  # bad arguments, bad MODULE:OBJECT target or invalid settings


def add_common_options(parser: argparse.ArgumentParser, prefixed: str) -> None:
    """`--queue-prefix` (prepended to `prefixed`, "every step queue name" say) and `--log-level`."""
    parser.add_argument(
        "--queue-prefix",
        metavar="PREFIX",
        help=f"prepend PREFIX to {prefixed} (default: $QUEUE_PREFIX, else none)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level (default: INFO)",
    )


def configure_logging(level: str) -> None:
    """One line per record: time, level, logger, message."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def run_reporting(prog: str, run: Callable[[], None]) -> int:
    """Call `run`; a pyworker error becomes one line on stderr and its exit code."""
    try:
        run()
    except BrokerError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_BROKER
    except PyworkerError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
