"""`workflow-manager bulk`: one action on every job a filter matches, through the manager's
API (`POST /api/jobs/bulk`): a dry run first, shown and confirmed (or `--yes`), then the bulk,
followed to its end (`GET /api/bulk/{id}`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys
from typing import Any

from workflow_manager.client import bulk_jobs, fetch_bulk
from workflow_manager.cliparser import EXIT_FAILED, EXIT_OK, EXIT_USAGE

__all__ = ["bulk_command"]

_FORK_OPTIONS = (("from_step", "--from"), ("input", "--input"), ("definition", "--definition"),
                 ("children", "--children"))  # fmt: skip
_SHOWN_IDS = 5  # the matched ids a bulk shows before asking
_SHOWN_ERRORS = 10  # the refusals it shows at the end
_BULK_POLL_S = 0.5  # how often a followed bulk is read again


def bulk_command(args: argparse.Namespace) -> int:
    """`workflow-manager bulk`: match, ask (or --yes), act, and follow the bulk to its end."""

    fork = _bulk_fork(args)
    if isinstance(fork, str):
        print(f"error: {fork}", file=sys.stderr)
        return EXIT_USAGE
    criteria = _bulk_filter(args)
    dry = asyncio.run(bulk_jobs(args.api_url, args.action, criteria, fork=fork, dry_run=True,
                                api_token=args.api_token))  # fmt: skip
    matched = int(dry["matched"])
    if matched == 0:
        print("no job matches: nothing done")
        return EXIT_OK
    print(_matched_line(matched, dry["sample"]))
    if not args.yes:
        # Asked on a terminal only: a "y" piped in by a script is no one's answer, and a bulk
        # is not undone; a script says --yes.
        if sys.stdin is None or not sys.stdin.isatty():
            print(
                f"error: not a terminal to ask on: run again with --yes to {args.action} "
                f"{_jobs(matched)} (nothing done)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        print(f"{args.action} {_jobs(matched)}? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("aborted: nothing done", file=sys.stderr)
            return EXIT_FAILED
    started = asyncio.run(bulk_jobs(args.api_url, args.action, criteria, fork=fork,
                                    api_token=args.api_token))  # fmt: skip
    bulk_id = str(started["id"])
    # The filter is evaluated again for the bulk itself: say so if it matches another count.
    now = int(started["matched"])
    changed_since = f" (the filter matches {now} now, {matched} at the dry run)"
    print(f"bulk {bulk_id}: {args.action} of {_jobs(now)}{changed_since if now != matched else ''}")
    if args.no_wait:
        print(f"follow it: GET {args.api_url.rstrip('/')}/api/bulk/{bulk_id}", file=sys.stderr)
        return EXIT_OK
    try:
        final = asyncio.run(_follow_bulk(args.api_url, bulk_id, args.api_token))
    except KeyboardInterrupt:
        print(f"\nstopped following; bulk {bulk_id} goes on in the manager", file=sys.stderr)
        return 130
    print(_bulk_summary(final))
    return EXIT_OK


def _bulk_fork(args: argparse.Namespace) -> dict[str, Any] | str | None:
    """A bulk fork's options, None for another action, or the usage error saying what is amiss."""
    given = [option for dest, option in _FORK_OPTIONS if getattr(args, dest) is not None]
    if args.action != "fork":
        if given:
            return f"{', '.join(given)}: only for bulk fork, not {args.action}"
        return None
    if args.from_step is None:
        return "bulk fork needs --from STEP: the step to run each job again from"
    fork: dict[str, Any] = {"from": args.from_step}
    for key in ("input", "definition", "children"):
        if getattr(args, key) is not None:
            fork[key] = getattr(args, key)
    return fork


def _bulk_filter(args: argparse.Namespace) -> dict[str, Any]:
    """The options as the API's filter: only the criteria given (times as numbers where they are,
    else as the text given, which the API reads as RFC 3339 or refuses saying why)."""
    criteria: dict[str, Any] = {
        "workflow": args.workflow,
        "status": list(dict.fromkeys(args.status)) if args.status else None,
        "submitted_after": _time_value(args.submitted_after),
        "submitted_before": _time_value(args.submitted_before),
        "id_prefix": args.id_prefix,
        "meta": dict(args.meta) if args.meta else None,
    }
    return {key: value for key, value in criteria.items() if value is not None}


def _time_value(text: str | None) -> float | str | None:
    if text is None:
        return None
    with contextlib.suppress(ValueError):
        value = float(text)
        if math.isfinite(value):
            return value
    return text


def _jobs(count: int) -> str:
    return f"{count} job{'' if count == 1 else 's'}"


def _matched_line(matched: int, sample: list[str]) -> str:
    shown = ", ".join(sample[:_SHOWN_IDS])
    more = matched - min(len(sample), _SHOWN_IDS)
    verb = "matches" if matched == 1 else "match"
    return f"{_jobs(matched)} {verb}: {shown}{f' and {more} more' if more else ''}"


async def _follow_bulk(api_url: str, bulk_id: str, api_token: str | None) -> dict[str, Any]:
    """Read the bulk until it is finished, showing its progress on stderr; returns the last read
    (a terminal sees one line rewritten, anything else a line at each change)."""
    tty = sys.stderr.isatty()
    last = ""
    while True:
        bulk = await fetch_bulk(api_url, bulk_id, api_token)
        line = (
            f"{bulk['done']}/{bulk['total']} done: {bulk['changed']} changed, "
            f"{bulk['refused']} refused"
        )
        if line != last:
            print(f"\r{line}   " if tty else line, end="" if tty else "\n", file=sys.stderr,
                  flush=True)  # fmt: skip
            last = line
        if bulk["status"] == "finished":
            if tty:
                print(file=sys.stderr)
            return bulk
        await asyncio.sleep(_BULK_POLL_S)


def _bulk_summary(bulk: dict[str, Any]) -> str:
    """How a finished bulk went: its counts, and the first jobs it did not change with why."""
    lines = [
        f"bulk {bulk['id']} finished: {bulk['action']} of {_jobs(bulk['total'])}, "
        f"{bulk['changed']} changed, {bulk['refused']} refused"
    ]
    refused = bulk["refused"]
    if refused:
        errors = bulk.get("errors") or []
        shown = errors[:_SHOWN_ERRORS]
        first = f"the first {len(shown)}" if len(shown) < refused else "each"
        lines.append(f"{_jobs(refused)} not changed ({first} with why):")
        lines.extend(f"  {error['job']}: {error['reason']}" for error in shown)
    return "\n".join(lines)
