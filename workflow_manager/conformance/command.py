"""The `workflow-manager conformance` subcommand: its arguments, and the run with exit codes."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from workflow_manager.conformance.settings import (
    KitSettings,
    SettingsError,
    StoreUnavailable,
    parse_input,
)

__all__ = ["add_conformance_parser", "run_conformance_command", "settings_from_args"]

EXIT_USAGE = 2  # as workflow_manager.cli: bad arguments (BrokerError maps to 3 there)
EXIT_UNAVAILABLE = 3  # as workflow_manager.cli: the broker, or here the payload store, unusable

DESCRIPTION = """\
Send the worker that consumes QUEUE a fixed series of requests, shaped as the manager sends
them, and check each rule of the wire protocol (docs/protocol.md): one PASS/FAIL/SKIP line per
rule, then a summary. Run it against a worker on a queue of its own, not one the manager feeds:
the kit's requests are real requests, and it briefly consumes the queue itself."""

EPILOG = """\
examples:
  # an echo worker (replies with its input, fails on {"fail": true}): strictest checks
  QUEUE=echo pyworker examples/echo/echo.py:worker &
  workflow-manager conformance echo --echo

  # any worker: an input it accepts and one it fails on
  workflow-manager conformance segment-word-counts \\
      --input '{"section": "It was the best of times"}' --failing-input '{"section": 42}'

  # payloads by reference: the kit and the worker share a store
  WM_PAYLOAD_STORES=main=file:///srv/wm-payloads QUEUE=echo pyworker examples/echo/echo.py:worker &
  workflow-manager conformance echo --echo --payload-store main=file:///srv/wm-payloads

rules: reply-to, json-reply, attempt-echo, unknown-headers, unicode, large-input, concurrency,
       redelivery, error-reply, ack-after-reply, payload-ref, payload-ref-missing
       (docs/protocol.md, "Conformance kit")

exit codes: 0 every rule passed (or was skipped), 1 a rule failed, 2 bad arguments,
            3 RabbitMQ unreachable, no worker consumes QUEUE, or the payload store unusable
"""


def add_conformance_parser(commands: Any, amqp_url: str) -> None:
    """Add `conformance` to the CLI's subcommands; `amqp_url` is the default broker URL."""
    parser = commands.add_parser(
        "conformance",
        help="check that the worker on a queue speaks the wire protocol",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("queue", metavar="QUEUE", help="the queue the worker consumes")
    parser.add_argument("--amqp-url", default=amqp_url, help="RabbitMQ URL (env AMQP_URL)")
    parser.add_argument(
        "--input",
        metavar="JSON",
        help="a step input the worker accepts, a JSON object (default: a small sample)",
    )
    parser.add_argument(
        "--failing-input",
        metavar="JSON",
        help="a step input the worker fails on; without it (and --echo) error-reply is skipped",
    )
    parser.add_argument(
        "--echo",
        action="store_true",
        help='the worker echoes its input: check outputs equal inputs; fail with {"fail": true}',
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to wait for each expected reply (default: %(default)s)",
    )
    parser.add_argument(
        "--payload-store",
        metavar="NAME=URL",
        help="the payload store the worker has too (its WM_PAYLOAD_STORES), file:///<dir> or "
        "postgresql://...; without it the payload-ref rules are skipped",
    )


def settings_from_args(args: argparse.Namespace) -> KitSettings:
    """KitSettings from the parsed arguments; SettingsError names a bad option."""
    inputs: dict[str, Any] = {}
    if args.input is not None:
        inputs["input"] = parse_input(args.input, "--input")
    failing = (
        None if args.failing_input is None else parse_input(args.failing_input, "--failing-input")
    )
    return KitSettings(
        queue=args.queue,
        amqp_url=args.amqp_url,
        failing_input=failing,
        timeout_s=args.timeout,
        echo=args.echo,
        payload_store=args.payload_store,
        **inputs,
    )


def run_conformance_command(args: argparse.Namespace) -> int:
    """Run the kit and print its report; BrokerError (exit 3) propagates to the CLI."""
    from workflow_manager.conformance.report import format_summary, format_verdict
    from workflow_manager.conformance.runner import run_conformance

    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    def show(verdict: Any) -> None:
        print(format_verdict(verdict), flush=True)

    try:
        report = asyncio.run(run_conformance(settings, on_verdict=show))
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(format_summary(report.queue, report.verdicts, report.elapsed_s))
    return report.exit_code
