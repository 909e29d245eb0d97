"""The `workflow-manager` command: parse arguments, call the library, map errors to exit codes."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from workflow_manager.bridge.cli import add_bridge_parser, bridge_command
from workflow_manager.conformance.command import add_conformance_parser, run_conformance_command
from workflow_manager.engine.state import MAX_PRIORITY
from workflow_manager.errors import ApiUnreachable, BrokerError, ConfigError, ManagerError
from workflow_manager.limitoptions import LimitError, add_limit_options, limits_from_args
from workflow_manager.logformat import LOG_FORMATS
from workflow_manager.starttimes import MAX_DELAY_S

__all__ = ["main", "build_parser"]

EXIT_OK = 0
EXIT_FAILED = 1  # the job failed, or the workflow file is invalid
EXIT_USAGE = 2  # bad arguments
EXIT_UNAVAILABLE = 3  # RabbitMQ or the manager's API cannot be reached

DEFAULT_AMQP_URL = "amqp://guest:guest@localhost:5672/"
DEFAULT_API_URL = "http://127.0.0.1:8080"
EVENT_LOOPS = ("auto", "uvloop", "asyncio")

EPILOG = """\
examples:
  workflow-manager serve --config workflows.yaml --db wm.db --port 8080
  workflow-manager serve --db postgresql://wm@db.example.com/wm
  workflow-manager serve --db postgresql://wm@db.example.com/wm --partitions 8
  WM_API_TOKEN=s3cret workflow-manager serve --host 0.0.0.0 --log-format json
  workflow-manager validate workflows.yaml
  workflow-manager submit book-word-counts --payload '{"path": "book.txt"}' --wait
  workflow-manager submit book-word-counts --payload '{"path": "book.txt"}' --delay 600
  workflow-manager submit book-word-counts --payload '{"path": "urgent.txt"}' --priority 9
  workflow-manager submit book-word-counts --payload '{"path": "a.txt"}' --meta '{"tenant": "acme"}'
  workflow-manager status 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10
  workflow-manager watch 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10
  curl -N 'http://127.0.0.1:8080/api/events?workflow=book-word-counts'
  workflow-manager journal 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 --db wm.db
  workflow-manager cancel 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10
  workflow-manager retry 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10
  workflow-manager schedules
  workflow-manager schedules pause refresh-account/nightly
  workflow-manager signal 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 approve --payload '{"ok": true}'
  workflow-manager dead-letters list --limit 20
  workflow-manager dead-letters replay --id 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10:book-split
  workflow-manager dead-letters replay --letter 9c1e4b7a02d35f68
  API_TOKEN=s3cret workflow-manager bridge --config workflows.yaml
  workflow-manager conformance my-step-queue --input '{"text": "hi"}' --failing-input '{}'

environment:
  AMQP_URL (or AMQP_SERVER)  RabbitMQ URL            (default amqp://guest:guest@localhost:5672/)
  WM_QUEUE                   the manager's queue      (default workflow-manager)
  WM_CONFIG, WM_DB           serve's --config, --db (and journal's --db): a SQLite file, or
                             a postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE URL
  WM_RETENTION               serve's --retention in days (default 7)
  WM_EVENTS                  serve's --events: jobs, steps or off (default jobs)
  WM_PARTITIONS              serve's --partitions: several managers on one PostgreSQL journal
  WM_ADVERTISE_URL           serve's --advertise-url: where the other managers reach this API
  WM_MAX_RUNNING_JOBS        serve's --max-running-jobs (default: no bound)
  WM_API_URL                 status's and watch's --api-url (default http://127.0.0.1:8080)
  WM_API_TOKEN               serve's --api-token: the API asks every client for it; the
                             commands that call the API send it
  WM_LOG_FORMAT              serve's --log-format: text (default) or json

exit codes: 0 ok, 1 job failed or invalid file, 2 bad arguments, 3 broker or API unreachable
"""


def job_id_arg(text: str) -> str:
    """An argparse type: a job id as a lower-case hyphenated UUID, or a usage error."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a job id (a UUID)") from None


def delay_arg(text: str) -> float:
    """An argparse type: a delay in seconds (a finite number >= 0), or a usage error."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_DELAY_S:
        raise argparse.ArgumentTypeError(f"{text!r} is not a delay in seconds (a number >= 0)")
    return value


def priority_arg(text: str) -> int:
    """An argparse type: a job priority, an integer 0-9, or a usage error."""
    if not text.strip().isdigit() or not 0 <= int(text) <= MAX_PRIORITY:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a priority (an integer from 0 to {MAX_PRIORITY}, higher first)"
        )
    return int(text)


def meta_arg(text: str) -> dict[str, Any]:
    """An argparse type: job metadata, a JSON object, or a usage error."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        example = '{"tenant": "acme"}'
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object, e.g. '{example}'")
    return value


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The argument parser; defaults come from `env` so tests can pass their own."""
    amqp_url = env.get("AMQP_URL") or env.get("AMQP_SERVER") or DEFAULT_AMQP_URL
    queue = env.get("WM_QUEUE", "workflow-manager")
    parser = argparse.ArgumentParser(
        prog="workflow-manager",
        description="Run YAML workflows over RabbitMQ: dispatch steps to workers in any "
        "language, fan out lists to child jobs, gather the results.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the manager and its HTTP API",
        description="Run the manager and its HTTP API: the API under /api, health at /healthz "
        "and /readyz, Prometheus metrics at /metrics (README.md, Metrics).",
    )
    serve.add_argument(
        "--config",
        default=env.get("WM_CONFIG", "workflows.yaml"),
        help="workflow file (default: %(default)s)",
    )
    serve.add_argument("--amqp-url", default=amqp_url, help="RabbitMQ URL (env AMQP_URL)")
    serve.add_argument(
        "--db",
        default=env.get("WM_DB", "wm.db"),
        help="the journal, every message for recovery: a SQLite file, or a PostgreSQL database "
        "as postgresql://USER@HOST[:PORT]/DB (default: %(default)s)",
    )
    serve.add_argument(
        "--retention",
        type=float,
        default=float(env.get("WM_RETENTION", 7)),
        metavar="DAYS",
        help="delete finished jobs older than this from the journal (default: %(default)s)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8080, help="HTTP port (default: %(default)s)")
    serve.add_argument(
        "--queue",
        default=queue,
        help="reply queue; triggers go to QUEUE.jobs (default: %(default)s)",
    )
    serve.add_argument(
        "--partitions",
        type=int,
        default=int(env["WM_PARTITIONS"]) if env.get("WM_PARTITIONS", "").isdigit() else None,
        metavar="P",
        help="several managers on one PostgreSQL journal: its jobs are split into P partitions,"
        " each run by one manager at a time (fixed per database; env WM_PARTITIONS)",
    )
    serve.add_argument(
        "--advertise-url",
        default=env.get("WM_ADVERTISE_URL") or None,
        metavar="URL",
        help="with --partitions: where the other managers reach this one's HTTP API, to hand "
        "it requests about the jobs it runs (env WM_ADVERTISE_URL; default: http://HOST:PORT, "
        "a wildcard HOST replaced by this machine's name)",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="debug logs every message (default: %(default)s)",
    )
    serve.add_argument(
        "--events",
        default=env.get("WM_EVENTS", "jobs"),
        choices=["jobs", "steps", "off"],
        help="run events published to the exchange QUEUE.events: jobs (job.* of top-level "
        "jobs), steps (step.* and child jobs' too) or off; GET /api/events streams them all "
        "either way (env WM_EVENTS; default: %(default)s)",
    )
    serve.add_argument(
        "--max-running-jobs",
        default=env.get("WM_MAX_RUNNING_JOBS") or None,
        metavar="N",
        help="at most N top-level jobs run at once, all workflows together; the others wait "
        "with status queued, highest priority first, then oldest (env WM_MAX_RUNNING_JOBS; "
        "default: no bound)",
    )
    serve.add_argument(
        "--log-format",
        default=env.get("WM_LOG_FORMAT", "text"),
        choices=LOG_FORMATS,
        help="text, or json: one object a line with time, level, logger, message and the job,"
        " workflow and step it is about (env WM_LOG_FORMAT; default: %(default)s)",
    )
    serve.add_argument(
        "--api-token",
        default=env.get("WM_API_TOKEN") or None,
        metavar="TOKEN",
        help="every HTTP route but /healthz, /readyz and /metrics needs 'Authorization: Bearer"
        " TOKEN' (prefer the env WM_API_TOKEN: arguments show in ps)",
    )
    serve.add_argument(
        "--loop",
        default=env.get("WM_LOOP", "auto"),
        choices=EVENT_LOOPS,
        help="event loop: auto is uvloop where installed, else asyncio's (env WM_LOOP;"
        " default: %(default)s)",
    )
    add_limit_options(serve, env)

    validate = commands.add_parser("validate", help="check a workflow file and describe it")
    validate.add_argument("file", help="the workflow YAML file")

    submit = commands.add_parser("submit", help="start a job by publishing a trigger")
    submit.add_argument("workflow", help="workflow name")
    submit.add_argument(
        "--payload", default="{}", help="the job payload, a JSON object (default: {})"
    )
    submit.add_argument(
        "--id", dest="job_id", type=job_id_arg, help="job UUID (default: a new one)"
    )
    submit.add_argument(
        "--delay",
        type=delay_arg,
        metavar="SECONDS",
        help="start the job this many seconds from now (it is scheduled until then)",
    )
    submit.add_argument(
        "--priority",
        type=priority_arg,
        default=0,
        help="0 to 9, higher first where the manager holds work back (default: 0)",
    )
    submit.add_argument(
        "--meta",
        type=meta_arg,
        metavar="JSON",
        help="job metadata, a JSON object sent on every request of the job as x-meta",
    )
    submit.add_argument(
        "--wait",
        action="store_true",
        help="show progress (following the API's event stream), print the result; exit 1 if "
        "the job fails",
    )
    submit.add_argument("--amqp-url", default=amqp_url, help="RabbitMQ URL (env AMQP_URL)")
    submit.add_argument("--queue", default=queue, help="the manager's queue (default: %(default)s)")
    _add_api_options(submit, env, "manager API, for --wait's progress")

    for action, text in (
        ("cancel", "cancel a scheduled job, or a running one (its on_cancel steps run)"),
        ("retry", "run a failed job again from where it failed"),
    ):
        control = commands.add_parser(action, help=text)
        control.add_argument("job_id", type=job_id_arg, help="job UUID")
        _add_api_options(control, env)

    sched = commands.add_parser(
        "schedules", help="list the workflows' schedules, or pause / resume one (journaled)"
    )
    sched.add_argument(
        "action", nargs="?", default="list", choices=["list", "pause", "resume"],
        help="list (default): each schedule, its next fire time, last job and state",
    )  # fmt: skip
    sched.add_argument("target", nargs="?", default="", help="WORKFLOW/SCHEDULE to pause or resume")
    sched.add_argument("--json", action="store_true", help="print the API's JSON")
    _add_api_options(sched, env)

    signal = commands.add_parser(
        "signal", help="signal a waiting step (wait: true): its payload becomes the step's output"
    )
    signal.add_argument("job_id", type=job_id_arg, help="job UUID (a child job's too)")
    signal.add_argument("step", help="the waiting step's name")
    signal.add_argument("--payload", default="{}", help="the signal, a JSON object (default: {})")
    _add_api_options(signal, env)

    journal = commands.add_parser("journal", help="print a job's journal entries in order")
    journal.add_argument("job_id", type=job_id_arg, help="job UUID")
    journal.add_argument(
        "--db",
        default=env.get("WM_DB", "wm.db"),
        help="journal file or postgresql:// URL (default: %(default)s)",
    )
    journal.add_argument("--tree", action="store_true", help="include the job's child jobs")

    status = commands.add_parser("status", help="show a job's state")
    status.add_argument("job_id", type=job_id_arg, help="job UUID")
    _add_api_options(status, env)
    status.add_argument("--json", action="store_true", help="print the raw JSON")

    watch = commands.add_parser(
        "watch",
        help="follow a job live until it ends: its steps, and progress of task steps "
        "(exit 0 completed, 1 failed or cancelled)",
    )
    watch.add_argument("job_id", type=job_id_arg, help="job UUID")
    _add_api_options(watch, env, "manager API; watch follows GET /api/events?job=ID")
    _add_dead_letters_parser(commands, amqp_url, queue)
    add_bridge_parser(commands, env, amqp_url)
    add_conformance_parser(commands, amqp_url)
    return parser


def _add_api_options(
    parser: argparse.ArgumentParser, env: Mapping[str, str], what: str = "manager API"
) -> None:
    """--api-url and --api-token, for the commands that call the manager's HTTP API."""
    parser.add_argument(
        "--api-url",
        default=env.get("WM_API_URL", DEFAULT_API_URL),
        help=f"{what} (env WM_API_URL; default: %(default)s)",
    )
    parser.add_argument(
        "--api-token",
        default=env.get("WM_API_TOKEN") or None,
        metavar="TOKEN",
        help="the manager's API token, when it has one (prefer the env WM_API_TOKEN)",
    )


def _add_dead_letters_parser(commands: Any, amqp_url: str, queue: str) -> None:
    dead = commands.add_parser(
        "dead-letters", help="list or replay the messages the manager could not process"
    )
    actions = dead.add_subparsers(dest="dead_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="show the dead letters, oldest first; none is taken")
    listing.add_argument(
        "--limit", type=int, default=100, metavar="N", help="show at most N (default: %(default)s)"
    )
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    replay = actions.add_parser(
        "replay", help="publish dead letters back to the queue they came from, then remove them"
    )
    which = replay.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--id",
        dest="correlation_id",
        metavar="CORRELATION_ID",
        help="every dead letter with this correlation id",
    )
    which.add_argument(
        "--letter",
        metavar="LETTER_ID",
        help="exactly one dead letter: its ID as `dead-letters list` shows it",
    )
    which.add_argument("--all", action="store_true", help="every dead letter")
    for action in (listing, replay):
        action.add_argument("--amqp-url", default=amqp_url, help="RabbitMQ URL (env AMQP_URL)")
        action.add_argument(
            "--queue",
            default=queue,
            help="the manager's queue; dead letters are in QUEUE.dead (default: %(default)s)",
        )


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
    if args.command == "serve":
        return _serve(args)
    if args.command == "validate":
        return _validate(args.file)
    if args.command == "submit":
        return _submit(args)
    if args.command == "journal":
        return _journal(args)
    if args.command in ("cancel", "retry"):
        return _control(args)
    if args.command == "signal":
        return _signal(args)
    if args.command == "schedules":
        return _schedules(args)
    if args.command == "dead-letters":
        return _dead_letters(args)
    if args.command == "bridge":
        return bridge_command(args)
    if args.command == "conformance":
        return run_conformance_command(args)
    if args.command == "watch":
        return _watch(args)
    return _status(args)


def _serve(args: argparse.Namespace) -> int:
    from workflow_manager.api import ApiToken
    from workflow_manager.config import load_workflows
    from workflow_manager.logformat import configure_logging
    from workflow_manager.orchestrator import ManagerSettings
    from workflow_manager.server import run, serve

    if args.log_format not in LOG_FORMATS:  # argparse checks only what is typed, not the env
        return _usage(f"WM_LOG_FORMAT must be text or json, got {args.log_format!r}")
    if args.api_token == "":  # the env's empty value is None: this one was typed
        return _usage("--api-token is empty; give the token, or leave the option out")
    max_running_jobs = args.max_running_jobs
    if max_running_jobs is not None:
        if not str(max_running_jobs).strip().isdigit() or int(max_running_jobs) < 1:
            return _usage(
                "--max-running-jobs (or WM_MAX_RUNNING_JOBS) must be a whole number of jobs "
                f"above 0, got {max_running_jobs!r}"
            )
        max_running_jobs = int(max_running_jobs)
    try:
        limits, http = limits_from_args(args)
    except LimitError as exc:
        return _usage(str(exc))
    configure_logging(args.log_level, args.log_format)
    try:
        api_token = ApiToken(args.api_token) if args.api_token else None
    except ValueError as exc:  # too short, non-ASCII: said without quoting the token
        return _usage(f"--api-token (or WM_API_TOKEN): {exc}")
    workflows = load_workflows(args.config)
    if args.retention <= 0:
        return _usage(f"--retention must be a number of days above 0, got {args.retention}")
    if args.events not in ("jobs", "steps", "off"):
        return _usage(f"--events (or WM_EVENTS) must be jobs, steps or off, got {args.events!r}")
    if args.partitions is not None and not 1 <= args.partitions <= 1024:
        return _usage(f"--partitions must be 1 to 1024, got {args.partitions}")
    from workflow_manager.settings import advertised_url

    advertise_url = args.advertise_url or advertised_url(args.host, args.port)
    if not advertise_url.startswith(("http://", "https://")):
        return _usage(
            f"--advertise-url (or WM_ADVERTISE_URL) must be an http:// or https:// URL, "
            f"got {advertise_url!r}"
        )
    settings = ManagerSettings(
        amqp_url=args.amqp_url, queue=args.queue, retention_days=args.retention,
        events=args.events, max_running_jobs=max_running_jobs,
        partitions=args.partitions, advertise_url=advertise_url.rstrip("/"), **limits,
    )  # fmt: skip
    main = serve(workflows, settings, args.db, args.host, args.port, api_token=api_token, http=http)
    run(main, args.loop)
    return EXIT_OK


def _validate(path: str) -> int:
    from workflow_manager.config import describe_workflows, load_workflows

    workflows = load_workflows(path)
    print(describe_workflows(workflows))
    print(f"{path}: OK, {len(workflows)} workflow(s)")
    return EXIT_OK


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _submit(args: argparse.Namespace) -> int:
    from workflow_manager.client import fetch_job, follow_job, progress_line, submit_job

    payload = _json_object(args.payload)
    if isinstance(payload, str):
        return _usage(payload)
    job_id = args.job_id or str(uuid.uuid4())
    last_line = ""

    async def show_progress() -> None:
        nonlocal last_line
        try:
            line = progress_line(await fetch_job(args.api_url, job_id, args.api_token))
        except ManagerError:
            return  # progress is a courtesy; the outcome message is what counts
        if line != last_line and sys.stderr.isatty():
            print(f"\r{line}   ", end="", file=sys.stderr, flush=True)
        elif line != last_line:
            print(line, file=sys.stderr, flush=True)
        last_line = line

    async def submit() -> Any:
        # Progress follows the job's event stream; the outcome message says how it ended.
        sending = submit_job(
            args.amqp_url, args.workflow, payload, job_id, queue=args.queue, wait=args.wait,
            priority=args.priority,
            delay_s=args.delay,
            meta=args.meta,
        )  # fmt: skip
        if not args.wait:
            return await sending
        opened = asyncio.Event()
        follower = asyncio.create_task(
            follow_job(args.api_url, job_id, show_progress, opened, api_token=args.api_token)
        )
        try:
            # Trigger once the stream is open, so no event of the job falls before it.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(opened.wait(), 5.0)
            return await sending
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower

    outcome = asyncio.run(submit())
    if outcome is None:
        print(job_id)
        return EXIT_OK
    if sys.stderr.isatty() and last_line:
        print(file=sys.stderr)
    print(
        json.dumps(
            {
                "id": job_id,
                "status": outcome.status,
                **_outcome_fields(outcome.body, outcome.status),
            },
            indent=2,
        )
    )
    return EXIT_OK if outcome.status == "completed" else EXIT_FAILED


def _outcome_fields(body: dict[str, Any], status: str) -> dict[str, Any]:
    return {"result": body} if status == "completed" else {"error": body.get("error", body)}


def _control(args: argparse.Namespace) -> int:
    from workflow_manager.client import control_job

    job_id = args.job_id
    job = asyncio.run(control_job(args.api_url, job_id, args.command, args.api_token))
    print(f"job {job_id}: {job.get('status')}")
    return EXIT_OK


def _schedules(args: argparse.Namespace) -> int:
    from workflow_manager.client import schedules
    from workflow_manager.textline import iso_utc

    if args.action != "list" and "/" not in args.target:
        return _usage(f"{args.action} needs WORKFLOW/SCHEDULE, e.g. refresh-account/nightly")
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

    payload = _json_object(args.payload)
    if isinstance(payload, str):
        return _usage(payload)
    answer = asyncio.run(signal_step(args.api_url, args.job_id, args.step, payload, args.api_token))
    said = "kept until the step is reached" if answer.get("status") == "kept" else "completed"
    print(f"job {args.job_id} step {args.step}: {said}")
    return EXIT_OK


def _json_object(text: str) -> dict[str, Any] | str:
    """`--payload` as a JSON object, or the usage error saying why it is not one."""
    try:
        payload = json.loads(text)
    except ValueError as exc:
        return f"--payload is not valid JSON: {exc}"
    if not isinstance(payload, dict):
        return f"--payload must be a JSON object, got {type(payload).__name__}"
    return payload


def _journal(args: argparse.Namespace) -> int:
    from workflow_manager.journal import is_postgres_url, open_journal
    from workflow_manager.journal.inspect import format_events

    job_id = args.job_id
    postgres = is_postgres_url(args.db)
    if not postgres and not os.path.exists(args.db):
        return _usage(f"no journal at {args.db} (use --db)")

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
    from workflow_manager.deadletters import (
        format_dead_letters,
        list_dead_letters,
        replay_dead_letters,
    )
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
        return _usage(f"--limit must be at least 1, got {args.limit}")
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
