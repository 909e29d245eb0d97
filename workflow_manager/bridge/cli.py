"""`workflow-manager bridge`: the argument parser and the command, kept apart from
workflow_manager.cli."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Any

__all__ = ["add_bridge_parser", "bridge_command"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3

EPILOG = """\
Serves every step with `http:` in the workflow file: each request's step input is sent as the
JSON body to the step's URL, and the JSON object answered is the step's output. A status
outside 2xx, a body that is not a JSON object, a connection error or a request past
`http.timeout` is an x-error reply, so the manager's retries and timeouts apply.
Header values may name environment variables, expanded at start-up and never logged:

  steps:
    - name: score
      http:
        url: https://api.example.com/score
        headers: {Authorization: "Bearer ${API_TOKEN}"}
        timeout: 10

References in a step input (payloads by reference) are resolved from the payload stores
before the call; an answer larger than --payload-ref-threshold has its largest values stored in
the first store and sent to the manager as references.

examples:
  API_TOKEN=s3cret workflow-manager bridge --config workflows.yaml
  workflow-manager bridge --config workflows.yaml --concurrency 50 --amqp-url amqp://rabbit/
  workflow-manager bridge --config workflows.yaml --payload-store main=file:///srv/wm-payloads

exit codes: 0 stopped by SIGINT/SIGTERM, 1 invalid file or missing variable,
            3 RabbitMQ unreachable
"""


def _concurrency(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 10000, got {value}")
    return value


def _byte_count(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text!r}")
    return int(text)


def add_bridge_parser(commands: Any, env: Any, amqp_url: str) -> None:
    """Add the `bridge` subcommand to `commands` (argparse subparsers); defaults from `env`."""
    bridge = commands.add_parser(
        "bridge",
        help="serve the workflow file's HTTP steps: call their URLs, reply with the JSON",
        description="Serve the HTTP steps of a workflow file.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bridge.add_argument(
        "--config",
        default=env.get("WM_CONFIG", "workflows.yaml"),
        help="workflow file (env WM_CONFIG; default: %(default)s)",
    )
    bridge.add_argument("--amqp-url", default=amqp_url, help="RabbitMQ URL (env AMQP_URL)")
    bridge.add_argument(
        "--concurrency",
        type=_concurrency,
        default=10,
        metavar="N",
        help="HTTP requests in flight at most, over all steps (default: %(default)s)",
    )
    bridge.add_argument(
        "--payload-store",
        action="append",
        metavar="NAME=URL",
        help="a payload store (file:///DIR or postgresql://...) to resolve references from; "
        "the first also stores large answers' values; repeatable "
        "(env WM_PAYLOAD_STORES: NAME=URL entries separated by spaces)",
    )
    bridge.add_argument(
        "--payload-ref-threshold",
        type=_byte_count,
        metavar="BYTES",
        help="store the largest values of an answer whose JSON is larger than BYTES "
        "(env WM_PAYLOAD_REF_THRESHOLD; default 262144)",
    )
    bridge.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="default: %(default)s",
    )


def bridge_command(args: argparse.Namespace) -> int:
    """Run `workflow-manager bridge`; config errors propagate (ConfigError, BridgeConfigError)."""
    from pyworker import BrokerError, PyworkerError
    from pyworker.settings import parse_store_entries
    from workflow_manager.bridge.service import BridgeSettings, serve_bridge
    from workflow_manager.config import load_workflows

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("aio_pika", "aiormq", "httpx", "httpcore"):  # httpx logs URLs with queries
        logging.getLogger(noisy).setLevel(logging.WARNING)
    workflows = load_workflows(args.config)
    stores = args.payload_store
    try:
        if stores is not None:  # checked here, so that the error names the flag
            parse_store_entries(stores, "--payload-store")
        settings = BridgeSettings(
            amqp_url=args.amqp_url,
            concurrency=args.concurrency,
            payload_stores=None if stores is None else tuple(stores),
            payload_ref_threshold=args.payload_ref_threshold,
        )
        asyncio.run(serve_bridge(workflows, settings, os.environ))
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except PyworkerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
