"""`serve`'s options for payloads by reference (docs/protocol.md, "Payloads by reference"):
where large values are stored, past what size, and for how long after their job ended."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from payload_refs import DEFAULT_THRESHOLD, parse_store
from workflow_manager.limitoptions import LimitError

__all__ = ["add_payload_options", "payload_settings"]

_RETENTION_S = 3600


def add_payload_options(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    """Add the payload store's options to `serve`'s parser, their defaults from `env`."""
    group = parser.add_argument_group(
        "payloads by reference",
        "large values stored once and sent as references: docs/protocol.md",
    )
    group.add_argument(
        "--payload-store",
        default=env.get("WM_PAYLOAD_STORE") or None,
        metavar="NAME=URL",
        help="where values go: NAME=file:///DIR (a directory every worker mounts) or "
        "NAME=postgresql://... (a table in that database); workers name it the same in "
        "WM_PAYLOAD_STORES (env WM_PAYLOAD_STORE; default: none, references pass through)",
    )
    group.add_argument(
        "--payload-ref-threshold",
        default=env.get("WM_PAYLOAD_REF_THRESHOLD") or None,
        metavar="BYTES",
        help="a trigger, reply or signal whose JSON is larger has its largest top-level values "
        f"stored (env WM_PAYLOAD_REF_THRESHOLD; default: {DEFAULT_THRESHOLD})",
    )
    group.add_argument(
        "--payload-retention",
        default=env.get("WM_PAYLOAD_RETENTION") or None,
        metavar="SECONDS",
        help="a job's stored values are removed this long after its top-level job ended "
        f"(env WM_PAYLOAD_RETENTION; default: {_RETENTION_S})",
    )


def payload_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The `ManagerSettings` fields the options give; LimitError naming a bad one."""
    fields: dict[str, Any] = {}
    if args.payload_store:
        try:
            parse_store(args.payload_store.strip(), "--payload-store (or WM_PAYLOAD_STORE)")
        except ValueError as exc:
            raise LimitError(str(exc)) from None
        fields["payload_store"] = args.payload_store.strip()
    if args.payload_ref_threshold is not None:
        raw = str(args.payload_ref_threshold).strip()
        if not raw.isdigit() or int(raw) < 1024:
            raise LimitError(
                "--payload-ref-threshold (or WM_PAYLOAD_REF_THRESHOLD) must be a whole number "
                f"of bytes, 1024 or more, got {args.payload_ref_threshold!r}"
            )
        fields["payload_ref_threshold"] = int(raw)
    if args.payload_retention is not None:
        try:
            seconds = float(str(args.payload_retention).strip())
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise LimitError(
                "--payload-retention (or WM_PAYLOAD_RETENTION) must be a number of seconds, "
                f"0 or more, got {args.payload_retention!r}"
            )
        fields["payload_retention_s"] = seconds
    return fields
