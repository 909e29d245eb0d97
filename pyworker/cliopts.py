"""What both pyworker commands share: exit codes, common options, logging, error reporting."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any

from pyworker.errors import BrokerError, PyworkerError
from pyworker.settings import (
    STORES_ENV_VAR,
    THRESHOLD_ENV_VAR,
    parse_store_entries,
)

__all__ = [
    "EXIT_OK",
    "EXIT_BROKER",
    "EXIT_USAGE",
    "add_common_options",
    "add_payload_options",
    "configure_logging",
    "payload_options",
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


def _byte_count(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text!r}")
    return int(text)


def add_payload_options(parser: argparse.ArgumentParser) -> None:
    """`--payload-store NAME=URL` (repeatable) and `--payload-ref-threshold BYTES`."""
    parser.add_argument(
        "--payload-store",
        action="append",
        metavar="NAME=URL",
        help="a payload store (file:///DIR or postgresql://...) to resolve references from; "
        "the first also stores large replies' values; repeatable "
        f"(default: ${STORES_ENV_VAR}, NAME=URL entries separated by spaces)",
    )
    parser.add_argument(
        "--payload-ref-threshold",
        type=_byte_count,
        metavar="BYTES",
        help="store the largest values of a reply whose JSON is larger than BYTES "
        f"(default: ${THRESHOLD_ENV_VAR}, else 262144)",
    )


def payload_options(args: argparse.Namespace) -> dict[str, Any]:
    """The payload flags as Worker settings (None: not given, the environment's apply).

    Raises:
        SettingsError: A `--payload-store` is not NAME=URL with a usable URL, or a name repeats.
    """
    stores = args.payload_store
    if stores is not None:
        parse_store_entries(stores, "--payload-store")
    return {
        "payload_stores": None if stores is None else tuple(stores),
        "payload_ref_threshold": args.payload_ref_threshold,
    }


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
