"""The `workflow-manager` command: call the library for each subcommand, map errors to exit codes.

The parser (every option, its help and defaults) is `workflow_manager.cliparser`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workflow_manager.bridge.cli import bridge_command
from workflow_manager.cliparser import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    build_parser,
    usage_error,
)
from workflow_manager.clisubmit import payload_object, submit_command
from workflow_manager.conformance.command import run_conformance_command
from workflow_manager.errors import ApiUnreachable, BrokerError, ConfigError, ManagerError
from workflow_manager.limitoptions import LimitError, limits_from_args
from workflow_manager.logformat import LOG_FORMATS
from workflow_manager.payloads.options import payload_settings
from workflow_manager.testing.command import replay_command, test_command

__all__ = ["main", "build_parser"]


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser(os.environ if env is None else env).parse_args(argv)
    try:
        return _run(args)
    except ConfigError as exc:
        print(f"error: invalid workflow file:\n{exc}", file=sys.stderr)
        return EXIT_FAILED
    except (BrokerError, ApiUnreachable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except ManagerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


def _run(args: argparse.Namespace) -> int:
    command = _COMMANDS.get(args.command, _status)
    return command(args)


def _serve(args: argparse.Namespace) -> int:
    from workflow_manager.journal import is_postgres_url
    from workflow_manager.journal.checkahead import check_ahead

    if not is_postgres_url(args.db):
        check_ahead(args.db)  # on another core while the rest of the manager is imported
    from workflow_manager.api.token import ApiToken
    from workflow_manager.config import load_workflows
    from workflow_manager.config.joblimits import load_limits
    from workflow_manager.config.webhooks import load_webhooks
    from workflow_manager.heap import keep_large_blocks_mapped
    from workflow_manager.logformat import configure_logging
    from workflow_manager.orchestrator import ManagerSettings
    from workflow_manager.server import run, serve

    if args.log_format not in LOG_FORMATS:  # argparse checks only what is typed, not the env
        return usage_error(f"WM_LOG_FORMAT must be text or json, got {args.log_format!r}")
    if args.api_token == "":  # the env's empty value is None: this one was typed
        return usage_error("--api-token is empty; give the token, or leave the option out")
    max_running_jobs = args.max_running_jobs
    if max_running_jobs is not None:
        if not str(max_running_jobs).strip().isdigit() or int(max_running_jobs) < 1:
            return usage_error(
                "--max-running-jobs (or WM_MAX_RUNNING_JOBS) must be a whole number of jobs "
                f"above 0, got {max_running_jobs!r}"
            )
        max_running_jobs = int(max_running_jobs)
    try:
        limits, http = limits_from_args(args)
        limits.update(payload_settings(args))
    except LimitError as exc:
        return usage_error(str(exc))
    configure_logging(args.log_level, args.log_format)
    try:
        api_token = ApiToken(args.api_token) if args.api_token else None
    except ValueError as exc:  # too short, non-ASCII: said without quoting the token
        return usage_error(f"--api-token (or WM_API_TOKEN): {exc}")
    workflows = load_workflows(args.config)
    webhooks = load_webhooks(args.config)  # their secrets are read by serve(), from the env
    if args.retention <= 0:
        return usage_error(f"--retention must be a number of days above 0, got {args.retention}")
    if args.events not in ("jobs", "steps", "off"):
        return usage_error(
            f"--events (or WM_EVENTS) must be jobs, steps or off, got {args.events!r}"
        )
    if args.partitions is not None and not 1 <= args.partitions <= 1024:
        return usage_error(f"--partitions must be 1 to 1024, got {args.partitions}")
    from workflow_manager.settings import advertised_url

    advertise_url = args.advertise_url or advertised_url(args.host, args.port)
    if not advertise_url.startswith(("http://", "https://")):
        return usage_error(
            f"--advertise-url (or WM_ADVERTISE_URL) must be an http:// or https:// URL, "
            f"got {advertise_url!r}"
        )
    settings = ManagerSettings(
        amqp_url=args.amqp_url, queue=args.queue, retention_days=args.retention,
        events=args.events, max_running_jobs=max_running_jobs, job_limits=load_limits(args.config),
        partitions=args.partitions, advertise_url=advertise_url.rstrip("/"), **limits,
    )  # fmt: skip
    main = serve(
        workflows, settings, args.db, args.host, args.port, api_token=api_token, http=http,
        webhooks=webhooks,
    )  # fmt: skip
    keep_large_blocks_mapped()  # a burst's large buffers go back to the OS when freed
    run(main, args.loop)
    return EXIT_OK


def _validate(path: str) -> int:
    from workflow_manager.config import describe_workflows, load_workflows
    from workflow_manager.config.describe import describe_limits
    from workflow_manager.config.joblimits import load_limits
    from workflow_manager.config.webhooks import load_webhooks

    workflows = load_workflows(path)
    print(describe_workflows(workflows))
    if limits := load_limits(path):
        print(
            f"\n{describe_limits(limits)}\n(a job starts when each of these that applies has room)"
        )
    for hook in load_webhooks(path):  # the file is valid without them; serve needs them
        if not os.environ.get(hook.secret_env):
            print(
                f"warning: webhook {hook.name!r}: {hook.secret_env} is not set here; "
                "`serve` refuses to start without the secret",
                file=sys.stderr,
            )
    print(f"{path}: OK, {len(workflows)} workflow(s)")
    return EXIT_OK


def _control(args: argparse.Namespace) -> int:
    from workflow_manager.client import control_job

    job_id = args.job_id
    job = asyncio.run(control_job(args.api_url, job_id, args.command, args.api_token))
    print(f"job {job_id}: {job.get('status')}")
    return EXIT_OK


def _fork(args: argparse.Namespace) -> int:
    from workflow_manager.client import fork_job

    asked = fork_job(
        args.api_url, args.job_id, args.from_step, input=args.input,
        definition=args.definition, children=args.children, api_token=args.api_token,
    )  # fmt: skip
    answer = asyncio.run(asked)
    # The id alone on stdout, so that NEW=$(workflow-manager fork ...) takes it.
    print(answer["id"])
    print(f"forked from {answer['forked_from']} at step {answer['step']}", file=sys.stderr)
    return EXIT_OK


def _bulk(args: argparse.Namespace) -> int:
    from workflow_manager.clibulk import bulk_command  # the HTTP client only when it is used

    return bulk_command(args)


def _schedules(args: argparse.Namespace) -> int:
    from workflow_manager.client import schedules
    from workflow_manager.textline import iso_utc

    if args.action != "list" and "/" not in args.target:
        return usage_error(f"{args.action} needs WORKFLOW/SCHEDULE, e.g. refresh-account/nightly")
    found = asyncio.run(schedules(args.api_url, args.action, args.target, args.api_token))
    if args.json:
        print(json.dumps(found, indent=2))
        return EXIT_OK
    for entry in found if isinstance(found, list) else [found]:
        cron, every = entry["cron"], entry["every"]
        when = f"cron {cron!r} {entry['timezone']}" if cron else f"every {every:g}s"
        state = "paused" if entry["paused"] else f"next {iso_utc(entry['next_fire_at'])}"
        last = f", last job {entry['last_job']}" if entry["last_job"] else ""
        print(f"{entry['workflow']}/{entry['name']}: {when}; {state}{last}")
    return EXIT_OK


def _signal(args: argparse.Namespace) -> int:
    from workflow_manager.client import signal_step

    payload = payload_object(args.payload)
    if isinstance(payload, str):
        return usage_error(payload)
    answer = asyncio.run(signal_step(args.api_url, args.job_id, args.step, payload, args.api_token))
    said = "kept until the step is reached" if answer.get("status") == "kept" else "completed"
    print(f"job {args.job_id} step {args.step}: {said}")
    return EXIT_OK


def _journal(args: argparse.Namespace) -> int:
    from workflow_manager.journal import is_postgres_url, open_journal
    from workflow_manager.journal.inspect import format_events

    job_id = args.job_id
    postgres = is_postgres_url(args.db)
    if not postgres and not os.path.exists(args.db):
        return usage_error(f"no journal at {args.db} (use --db)")

    async def read() -> str:
        # A database with no journal yet is left as it is: reading creates nothing.
        journal = await open_journal(args.db, create=not postgres)
        try:
            rows = await journal.events_of(job_id, tree=args.tree)
        finally:
            await journal.close()
        return format_events(rows) if rows else f"no journal entries for job {job_id}"

    print(asyncio.run(read()))
    return EXIT_OK


def _dead_letters(args: argparse.Namespace) -> int:
    from workflow_manager.deadletters import list_dead_letters, replay_dead_letters
    from workflow_manager.letters import format_dead_letters
    from workflow_manager.transport import dead_letter_queue

    if args.dead_command == "replay":
        count = asyncio.run(
            replay_dead_letters(
                args.amqp_url,
                args.queue,
                correlation_id=args.correlation_id,
                all=args.all,
                letter=args.letter,
            )
        )
        print(f"replayed {count} dead letter{'' if count == 1 else 's'}")
        if count == 0 and args.correlation_id is not None:
            print(
                f"no dead letter has correlation id {args.correlation_id!r} "
                "(see: workflow-manager dead-letters list)",
                file=sys.stderr,
            )
        if count == 0 and args.letter is not None:
            print(
                f"no dead letter has id {args.letter!r} (see: workflow-manager dead-letters list)",
                file=sys.stderr,
            )
        return EXIT_OK
    if args.limit < 1:
        return usage_error(f"--limit must be at least 1, got {args.limit}")
    letters = asyncio.run(list_dead_letters(args.amqp_url, args.queue, args.limit))
    if args.json:
        print(json.dumps([letter.to_json() for letter in letters], indent=2))
    else:
        empty = f"no dead letters in '{dead_letter_queue(args.queue)}'"
        print(format_dead_letters(letters) or empty)
    return EXIT_OK


def _watch(args: argparse.Namespace) -> int:
    from workflow_manager.watch import watch_job

    status = asyncio.run(watch_job(args.api_url, args.job_id, sys.stdout, args.api_token))
    return EXIT_OK if status == "completed" else EXIT_FAILED


def _status(args: argparse.Namespace) -> int:
    from workflow_manager.client import fetch_job

    job_id = args.job_id
    job = asyncio.run(fetch_job(args.api_url, job_id, args.api_token))
    if args.json:
        print(json.dumps(job, indent=2))
    else:
        print(render_job(job))
    return EXIT_OK


def render_job(job: dict[str, Any]) -> str:
    """A job from the API as a few readable lines."""
    lines = [f"job {job.get('uuid')}  workflow {job.get('workflow')}  {job.get('status')}"]
    if job.get("parent"):
        lines.append(f"  child of {job['parent']}")
    if job.get("forked_from"):
        source = job["forked_from"]
        lines.append(f"  forked from {source.get('job')} at step {source.get('step')}")
    for fork in job.get("forks") or []:
        lines.append(f"  forked as {fork.get('id')} at step {fork.get('step')}")
    for title in ("completed", "running", "failed"):
        for entry in job.get(title) or []:
            if entry.get("name") in ("__start__", "__end__"):
                continue
            extra = ""
            if entry.get("tasks") is not None:
                done = entry.get("tasks_done", len(entry["tasks"]) if title == "completed" else "?")
                extra = f"  children {done}/{len(entry['tasks'])}"
            lines.append(f"  {title:<9} {entry.get('name')}  {entry.get('elapsed', 0):.3f}s{extra}")
    if job.get("error"):
        lines.append(f"  error: {json.dumps(job['error'])}")
    if job.get("result") is not None:
        lines.append(f"  result: {json.dumps(job['result'])[:2000]}")
    return "\n".join(lines)


# Each subcommand's function (`status` is the default: the only one left).
_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": _serve,
    "validate": lambda args: _validate(args.file),
    "submit": submit_command,
    "journal": _journal,
    "cancel": _control,
    "retry": _control,
    "pause": _control,
    "resume": _control,
    "fork": _fork,
    "bulk": _bulk,
    "signal": _signal,
    "schedules": _schedules,
    "dead-letters": _dead_letters,
    "bridge": bridge_command,
    "conformance": run_conformance_command,
    "watch": _watch,
    "test": test_command,
    "replay": replay_command,
}
