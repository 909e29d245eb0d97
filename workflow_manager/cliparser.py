"""The `workflow-manager` command's parser: every subcommand and option, with its help, its
default (some from the environment) and the argument types that check a value as it is read.

Declarative, like a table: `workflow_manager.cli` runs what it parses.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Mapping
from typing import Any

from workflow_manager.bridge.cli import add_bridge_parser
from workflow_manager.conformance.command import add_conformance_parser
from workflow_manager.engine.statuses import MAX_PRIORITY
from workflow_manager.limitoptions import add_limit_options
from workflow_manager.logformat import LOG_FORMATS
from workflow_manager.payloads.options import add_payload_options
from workflow_manager.starttimes import MAX_DELAY_S
from workflow_manager.testing.command import add_testing_parsers

__all__ = [
    "build_parser", "usage_error", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_UNAVAILABLE"
]  # fmt: skip

EXIT_OK = 0
EXIT_FAILED = 1  # the job failed, or the workflow file is invalid
EXIT_USAGE = 2  # bad arguments
EXIT_UNAVAILABLE = 3  # RabbitMQ or the manager's API cannot be reached

DEFAULT_AMQP_URL = "amqp://guest:guest@localhost:5672/"
DEFAULT_API_URL = "http://127.0.0.1:8080"
EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def usage_error(message: str) -> int:
    """Say what is wrong with the command line; the exit code for it."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


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
  workflow-manager pause 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10
  workflow-manager fork 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 --from count --input '{"n": 2}'
  workflow-manager bulk cancel --workflow book-word-counts --status running --meta tenant=acme
  workflow-manager schedules
  workflow-manager schedules pause refresh-account/nightly
  workflow-manager signal 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 approve --payload '{"ok": true}'
  workflow-manager dead-letters list --limit 20
  workflow-manager dead-letters replay --id 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10:book-split
  workflow-manager dead-letters replay --letter 9c1e4b7a02d35f68
  API_TOKEN=s3cret workflow-manager bridge --config workflows.yaml
  workflow-manager conformance my-step-queue --input '{"text": "hi"}' --failing-input '{}'
  workflow-manager test workflows.yaml --fixtures counts.fixtures.yaml
  workflow-manager replay --db wm.db --job 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 --config new.yaml

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


def step_input_arg(text: str) -> dict[str, Any]:
    """An argparse type: a step's input, a JSON object, or a usage error."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        example = '{"path": "book.txt"}'
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a JSON object (a step's input is one, e.g. '{example}')"
        )
    return value


def meta_pair_arg(text: str) -> tuple[str, Any]:
    """An argparse type: one metadata criterion `KEY=VALUE`, the value as JSON (`n=3`,
    `ok=true`, `tenant="acme"`), or else as the text it is (`tenant=acme`); or a usage error."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE (e.g. tenant=acme, or n=3 for a number)"
        )
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a bare word: the text itself, as a shell user means it


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
        "and /readyz, Prometheus metrics at /metrics (docs/reference/metrics.md).",
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
        "jobs, and bulk.*), steps (step.* and child jobs' too) or off; GET /api/events streams "
        "them all either way (env WM_EVENTS; default: %(default)s)",
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
    add_payload_options(serve, env)

    validate = commands.add_parser("validate", help="check a workflow file and describe it")
    validate.add_argument("file", help="the workflow YAML file")

    submit = commands.add_parser(
        "submit", help="start a job: a trigger over AMQP, or over HTTP with --api-url"
    )
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
    submit.add_argument(
        "--amqp-url", default=amqp_url, action=_Given, help="RabbitMQ URL (env AMQP_URL)"
    )
    submit.add_argument(
        "--queue", default=queue, action=_Given, help="the manager's queue (default: %(default)s)"
    )
    _add_api_options(
        submit, env, "manager API: with --api-url (or WM_API_URL) and neither --amqp-url nor "
        "--queue, the job is submitted over HTTP; else --wait's progress", given=_Given,
    )  # fmt: skip
    submit.set_defaults(api_url_given="WM_API_URL" in env, amqp_url_given=False, queue_given=False)

    for action, text in (
        ("cancel", "cancel a scheduled job, or a running one (its on_cancel steps run)"),
        ("retry", "run a failed job again from where it failed"),
        ("pause", "pause a running job: no new step is sent, its timers wait (journaled)"),
        ("resume", "resume a paused job: what it held back goes out now"),
    ):
        control = commands.add_parser(action, help=text)
        control.add_argument("job_id", type=job_id_arg, help="job UUID")
        _add_api_options(control, env)
    _add_fork_parser(commands, env)
    _add_bulk_parser(commands, env)

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
    add_testing_parsers(commands, env.get("WM_DB", "wm.db"))
    return parser


class _Given(argparse.Action):
    """Stores the value and notes that it was given (`<dest>_given`): for a choice that
    depends on which options the command line named, not on their values."""

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _add_api_options(
    parser: argparse.ArgumentParser,
    env: Mapping[str, str],
    what: str = "manager API",
    given: type[argparse.Action] | None = None,
) -> None:
    """--api-url and --api-token, for the commands that call the manager's HTTP API;
    `given`: the action --api-url takes (to note that it was named)."""
    action: dict[str, Any] = {"action": given} if given is not None else {}
    parser.add_argument(
        "--api-url",
        default=env.get("WM_API_URL", DEFAULT_API_URL),
        help=f"{what} (env WM_API_URL; default: %(default)s)",
        **action,
    )
    parser.add_argument(
        "--api-token",
        default=env.get("WM_API_TOKEN") or None,
        metavar="TOKEN",
        help="the manager's API token, when it has one (prefer the env WM_API_TOKEN)",
    )


FORK_DESCRIPTION = """\
Start a new job from a completed, failed or cancelled one (also one that has left the
manager's memory: it is read from the journal). The new job runs the same payload, metadata
and priority, and:

  keeps    the source's outputs of the steps that are neither STEP nor downstream of it and
           that completed, were skipped or were recovered by their fallback;
  runs     STEP (with --input, else the input the source gave it) and every step downstream
           of it, and the steps the source did not finish; a compensated step (its work was
           undone) runs again.

For a task step, --children failed keeps the children that completed with an unchanged
payload and runs the failed, cancelled and unfinished ones; --children all runs every child.
Prints the new job's id (and, on stderr, what it was forked from). The two jobs are linked:
`workflow-manager status` shows the fork's source and the source's forks.
"""

FORK_EPILOG = """\
examples:
  workflow-manager fork 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 --from count
  workflow-manager fork 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 --from count --input '{"n": 2}'
  workflow-manager fork 3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10 --from fan --children all \\
      --definition pinned
"""


def _add_fork_parser(commands: Any, env: Mapping[str, str]) -> None:
    fork = commands.add_parser(
        "fork",
        help="start a new job from a finished one: keep the outputs before a step, run the rest",
        description=FORK_DESCRIPTION,
        epilog=FORK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fork.add_argument("job_id", type=job_id_arg, help="the source job's UUID (a top-level job)")
    fork.add_argument(
        "--from",
        dest="from_step",
        required=True,
        metavar="STEP",
        help="the step to run again from: it and every step downstream of it run again",
    )
    fork.add_argument(
        "--input",
        type=step_input_arg,
        metavar="JSON",
        help="STEP's input, a JSON object (default: the input the source gave it, made from "
        "the kept outputs)",
    )
    fork.add_argument(
        "--definition",
        default="current",
        choices=["current", "pinned"],
        help="current: the workflow as the manager has it now (a fixed definition); pinned: "
        "the definition the source ran (default: %(default)s)",
    )
    fork.add_argument(
        "--children",
        default="failed",
        choices=["failed", "all"],
        help="when STEP is a task step: failed runs only the children that did not complete, "
        "all runs every child again (default: %(default)s)",
    )
    _add_api_options(fork, env)


BULK_ACTIONS = ("cancel", "retry", "pause", "resume", "fork")
JOB_STATUSES = ("scheduled", "queued", "running", "paused", "completed", "failed", "cancelled")

BULK_DESCRIPTION = """\
Cancel, retry, pause, resume or fork every top-level job a filter matches (every criterion
given must hold; no criterion matches every job). First a dry run says how many jobs match
and shows the first ids; then, unless --yes, it asks before doing anything (type y). When
stdin is not a terminal it does nothing without --yes.

The filter is evaluated once, when the action is asked for: the jobs it matched then are
journaled as one bulk action and carried out in the background, each job exactly once, even
across a restart of the manager (a job that starts matching later is not included). A job the
action cannot change (a retry of a job that is running) is counted as refused, with why; the
command still exits 0 and says so. It follows the bulk until it is finished (Ctrl-C stops
following, not the bulk); --no-wait prints its id and returns at once.
At most 250,000 jobs per bulk; not with `serve --partitions` yet.
"""

BULK_EPILOG = """\
examples:
  workflow-manager bulk cancel --workflow ingest --status running --meta tenant=acme
  workflow-manager bulk retry --status failed --submitted-after 2026-11-28T09:00:00Z --yes
  workflow-manager bulk pause --workflow ingest --id-prefix 3f2a --no-wait --yes
  workflow-manager bulk fork --workflow ingest --status failed --from count \\
      --input '{"text": "fixed"}' --yes

--meta KEY=VALUE: the value is read as JSON where it is JSON (n=3 a number, ok=true a
boolean, tenant='"acme"' a string) and as plain text otherwise (tenant=acme).
"""


def _add_bulk_parser(commands: Any, env: Mapping[str, str]) -> None:
    bulk = commands.add_parser(
        "bulk",
        help="cancel, retry, pause, resume or fork every job a filter matches (asks first)",
        description=BULK_DESCRIPTION,
        epilog=BULK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bulk.add_argument("action", choices=BULK_ACTIONS, help="what to do to each job")
    which = bulk.add_argument_group("which jobs (all the criteria given must hold)")
    which.add_argument("--workflow", metavar="NAME", help="jobs of this workflow")
    which.add_argument(
        "--status",
        action="extend",
        nargs="+",
        choices=JOB_STATUSES,
        metavar="STATUS",
        help="jobs with one of these statuses (several: --status failed cancelled); one of "
        f"{', '.join(JOB_STATUSES)} (paused: a running job that was paused)",
    )
    for side, where in (("after", "at or after"), ("before", "before")):
        which.add_argument(
            f"--submitted-{side}",
            metavar="TIME",
            help=f"jobs submitted {where} TIME: unix seconds or RFC 3339, e.g. "
            "2026-11-28T09:00:00Z",
        )
    which.add_argument("--id-prefix", metavar="PREFIX", help="jobs whose id starts with PREFIX")
    which.add_argument(
        "--meta",
        type=meta_pair_arg,
        action="append",
        metavar="KEY=VALUE",
        help="jobs whose metadata has KEY with this value (VALUE as JSON, else as text); "
        "repeat for several keys",
    )
    fork = bulk.add_argument_group("fork only (see `workflow-manager fork --help`)")
    fork.add_argument(
        "--from",
        dest="from_step",
        metavar="STEP",
        help="the step to run each job again from (required for fork)",
    )
    fork.add_argument(
        "--input",
        type=step_input_arg,
        metavar="JSON",
        help="STEP's input for every fork, a JSON object (default: each source's own)",
    )
    fork.add_argument(
        "--definition",
        choices=["current", "pinned"],
        help="current (default): the workflow as the manager has it now; pinned: the "
        "definition each source ran",
    )
    fork.add_argument(
        "--children",
        choices=["failed", "all"],
        help="when STEP is a task step: failed (default) runs only the children that did "
        "not complete, all runs every child again",
    )
    bulk.add_argument(
        "--yes", "-y", action="store_true", help="do it without asking (needed when stdin is "
        "not a terminal)",
    )  # fmt: skip
    bulk.add_argument(
        "--no-wait",
        action="store_true",
        help="print the bulk's id and return once it is started, without following it",
    )
    _add_api_options(bulk, env)


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
