"""The worker kinds the conformance kit is run against: one row each, a command line and env.

A row's command runs in `cwd` (relative to the repository) with QUEUE, AMQP_URL and
WM_PAYLOAD_STORES (a `file://` store of the test's, which the kit is given as --payload-store
when the kind resolves references) set by the test; `{queue}` in an argument is replaced by the
queue too. The worker must print a line containing `listening on <QUEUE>` once it consumes (the
echo-worker contract).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

PYTHON = sys.executable
BROKEN = "tests/integration/conformance/brokenworkers.py"
PAYLOAD_STORES_ENV = "WM_PAYLOAD_STORES"  # the worker libraries' stores: NAME=URL


@dataclass(frozen=True)
class WorkerKind:
    """How to start one kind of worker for the kit."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "."
    kit_args: tuple[str, ...] = ("--echo",)
    refs: bool = True  # resolves payload references: the kit checks them (--payload-store)

    def argv(self, queue: str) -> list[str]:
        """The command line for a worker on `queue`."""
        return [part.replace("{queue}", queue) for part in self.command]

    def environment(self, queue: str, amqp_url: str, payload_store: str) -> dict[str, str]:
        """The worker's environment: its queue, the broker, the payload store, its own env."""
        return {
            "QUEUE": queue,
            "AMQP_URL": amqp_url,
            PAYLOAD_STORES_ENV: payload_store,
            **self.env,
        }

    def kit_argv(self, payload_store: str) -> tuple[str, ...]:
        """The kit's options for this kind, the store among them when the kind resolves refs."""
        return (*self.kit_args, *(("--payload-store", payload_store) if self.refs else ()))


# Echo workers that follow the protocol: the kit must PASS every rule for each.
GOOD_WORKERS = (
    WorkerKind("pyworker", (PYTHON, "-m", "pyworker", "examples/echo/echo.py:worker")),
    WorkerKind("jsworker", ("node", "jsworker/examples/echo.js")),
    WorkerKind(
        "goworker",
        # Built, then exec'd: `go run` would keep SIGTERM from the worker it starts.
        ("sh", "-c", 'go build -o "$0" ./examples/echo && exec "$0"', "/tmp/{queue}-goecho"),
        env={"GOPROXY": "off", "GOSUMDB": "off"},  # Debian's packaged sources, offline
        cwd="goworker",
    ),
    WorkerKind(
        "exec",
        (
            PYTHON,
            "-m",
            "pyworker",
            "exec",
            "{queue}",
            "--concurrency",
            "8",
            "--",
            "examples/exec/echo.sh",
        ),
    ),  # fmt: skip
    WorkerKind("http-bridge", (PYTHON, "tests/integration/bridge/echo_bridge.py")),
)


def _broken(bug: str, refs: bool = False) -> WorkerKind:
    return WorkerKind(bug, (PYTHON, BROKEN), env={"BROKEN": bug}, refs=refs)


# Workers with one bug each, and the rules the kit must FAIL for them (every other rule passes
# or, where the bug hides what a rule needs, is skipped). They know nothing of payload
# references, so the kit is given no store for them (its payload rules are skipped), except for
# `ignore-refs`, whose bug that is.
BROKEN_WORKERS = (
    (_broken("ignore-refs", refs=True), {"payload-ref", "payload-ref-missing"}),
    (_broken("ack-first"), {"ack-after-reply"}),
    (_broken("fixed-queue"), {"reply-to", "json-reply", "attempt-echo"}),
    (_broken("no-correlation"), {"reply-to", "concurrency", "redelivery"}),
    (_broken("requeue-failures"), {"error-reply"}),
    (_broken("reply-and-requeue"), {"error-reply"}),
)
