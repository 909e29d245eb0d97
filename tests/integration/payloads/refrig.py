"""A rig for payloads-by-reference tests against every shipped echo worker (docs/protocol.md,
"Payloads by reference"): start a worker kind of tests/integration/conformance/kinds.py with
payload stores, talk to it as the manager does, read what it stored.

The toolchain a kind needs is checked first: Node.js with jsworker's packages (`npm ci` when
they are missing), Go with Debian's packaged sources (and the echo example compiled once, so a
compile error reads as one rather than as a worker that never listened). Without them a test
skips, and fails under CI.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any

import aio_pika
import psycopg
import pytest

from payload_refs import REFS_HEADER, PayloadStore, Ref, count_ref_keys
from tests.integration.conformance.kinds import WorkerKind
from tests.integration.harness import ROOT, Process, take_one
from tests.integration.polyglot.conftest import (
    AMQP091_SRC,
    GOWORKER_DIR,
    LIB_PQ_SRC,
    SETUP_HINT,
    X_TEXT_SRC,
    run_go,
)

STEP = "echo"
LISTEN_TIMEOUT_S = 60.0  # the Go kind compiles before it listens
REPLY_TIMEOUT_S = 120.0  # a 100 MB value is read, hashed, parsed, written and hashed again
JSWORKER_DIR = ROOT / "jsworker"
# Which worker library each kind is built on: their error texts differ, the contract does not.
LIBRARY = {
    "pyworker": "python",
    "exec": "python",
    "http-bridge": "python",
    "jsworker": "javascript",
    "goworker": "go",
}


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def ensure_ready(kind: WorkerKind) -> None:
    """Skip (fail under CI) when `kind`'s toolchain is missing; install or compile what it
    needs once per session."""
    if LIBRARY[kind.name] == "javascript":
        _node_ready()
    elif LIBRARY[kind.name] == "go":
        _go_ready()


@functools.cache
def _node_ready() -> None:
    if shutil.which("node") is None:
        _missing("`node` is not installed (jsworker needs Node.js 18+ and npm)")
    modules = JSWORKER_DIR / "node_modules"
    if (modules / "amqplib").is_dir() and (modules / "pg").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        _missing("`npm` is not installed (jsworker needs Node.js 18+ and npm)")
        return
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=JSWORKER_DIR, capture_output=True,
        text=True, timeout=90, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"npm ci failed:\n{result.stdout}\n{result.stderr}"


@functools.cache
def _go_ready() -> None:
    go = shutil.which("go")
    if go is None:
        _missing(f"`go` is not installed; {SETUP_HINT}")
        return
    for source in (AMQP091_SRC, X_TEXT_SRC, LIB_PQ_SRC):
        if not (source / "go.mod").is_file():
            _missing(f"{source.name} is not installed at {source}; {SETUP_HINT}")
    run_go(go, GOWORKER_DIR, "build", "-o", os.devnull, "./examples/echo")


def header(message: aio_pika.abc.AbstractMessage, name: str) -> Any:
    """A header of `message`, text decoded."""
    value = (message.headers or {}).get(name)
    return value.decode() if isinstance(value, bytes) else value


def json_text(value: Any) -> bytes:
    """`value` as every library writes it: compact UTF-8 JSON, keys in the order given."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def manager_request(body: Any, job: str, reply_to: str) -> aio_pika.Message:
    """A request for step `echo` of `job` shaped as the manager shapes one: `x-payload-refs`
    when the body holds references."""
    text = json_text(body)
    headers: dict[str, Any] = {"x-attempt": 1, "x-workflow": "payloads"}
    if refs := count_ref_keys(text):
        headers[REFS_HEADER] = refs
    return aio_pika.Message(
        text, content_type="application/json", delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        correlation_id=f"{job}:{STEP}", message_id=f"{job}:{STEP}:1", reply_to=reply_to,
        headers=headers,
    )  # fmt: skip


async def digest_and_size(store: PayloadStore, ref: Ref) -> tuple[str, int]:
    """The SHA-256 and size of the bytes `ref` names in `store`, read in pieces."""
    digest, size = hashlib.sha256(), 0
    async for piece in store.chunks(ref):
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size


def stored_rows(url: str) -> set[tuple[str, str, str, int]]:
    """(key, job_id, sha256, size) of every row of the PostgreSQL store's table at `url`."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT key, job_id, sha256, size FROM wm_payloads").fetchall()
    return {(key, job_id, digest, size) for key, job_id, digest, size in rows}


class EchoWorker:
    """One echo worker process on a queue of the test's, and the exclusive queue its replies
    come to."""

    def __init__(
        self,
        kind: WorkerKind,
        queue: str,
        process: Process,
        channel: aio_pika.abc.AbstractChannel,
        replies: aio_pika.abc.AbstractQueue,
    ) -> None:
        self.kind = kind
        self.queue = queue
        self.process = process
        self.channel = channel
        self.replies = replies

    async def ask(
        self, body: Any, job: str, timeout_s: float = REPLY_TIMEOUT_S
    ) -> aio_pika.abc.AbstractIncomingMessage:
        """Send one request for `job`; the reply to it."""
        message = manager_request(body, job, self.replies.name)
        await self.channel.default_exchange.publish(message, self.queue)
        reply = await take_one(self.replies, timeout_s)
        assert reply.correlation_id == f"{job}:{STEP}", reply.correlation_id
        return reply

    async def stop(self) -> int:
        """Stop the worker gracefully (it drains and acks first); its exit code."""
        return await self.process.stop()

    async def waiting(self, queue: str) -> int:
        """How many messages wait on `queue` (the worker's, or its reply queue)."""
        declared = await self.channel.declare_queue(queue, passive=True)
        assert declared.declaration_result.message_count is not None
        return declared.declaration_result.message_count


class RefRig:
    """Starts echo workers of any kind for one test; on exit stops them (each that came up must
    exit 0), deletes their queues and removes the files their command lines made."""

    def __init__(self, amqp_url: str, unique: str) -> None:
        self.amqp_url = amqp_url
        self.unique = unique
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._started: list[tuple[WorkerKind, str, Process]] = []
        self._listened: set[str] = set()  # queues whose worker came up: it must stop cleanly

    async def __aenter__(self) -> RefRig:
        self._connection = await aio_pika.connect(self.amqp_url)
        return self

    async def launch(
        self, kind: WorkerKind, stores: str, threshold: int | None = None
    ) -> tuple[str, Process]:
        """Start `kind` with WM_PAYLOAD_STORES=`stores` (and WM_PAYLOAD_REF_THRESHOLD) on a
        queue of its own, without waiting for it; the queue and the process."""
        ensure_ready(kind)
        queue = f"{self.unique}.{kind.name}{len(self._started)}"
        env = kind.environment(queue, self.amqp_url, stores)
        if threshold is not None:
            env["WM_PAYLOAD_REF_THRESHOLD"] = str(threshold)
        process = await Process.start(kind.name, *kind.argv(queue), env=env, cwd=ROOT / kind.cwd)
        self._started.append((kind, queue, process))
        return queue, process

    async def start(
        self, kind: WorkerKind, stores: str, threshold: int | None = None
    ) -> EchoWorker:
        """Start `kind` as `launch` does and wait until it says it is listening."""
        queue, process = await self.launch(kind, stores, threshold)
        await process.wait_for_line(rf"listening on {re.escape(queue)}", LISTEN_TIMEOUT_S)
        self._listened.add(queue)
        channel = await self._conn().channel()
        replies = await channel.declare_queue(exclusive=True)
        return EchoWorker(kind, queue, process, channel, replies)

    def _conn(self) -> aio_pika.abc.AbstractConnection:
        assert self._connection is not None, "RefRig is used outside `async with`"
        return self._connection

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Every process first, so a broker hiccup below cannot leave one running.
        codes = [(queue, await process.stop(), process) for _kind, queue, process in self._started]
        channel = await self._conn().channel()
        for kind, queue, _process in self._started:
            await channel.queue_delete(queue)
            for path in _scratch_files(kind, queue):
                path.unlink(missing_ok=True)
        await self._conn().close()
        for queue, code, process in codes:
            if queue in self._listened:
                assert code == 0, f"{process.name} exited with {code}:\n{process.output}"


def _scratch_files(kind: WorkerKind, queue: str) -> list[Path]:
    """Files a kind's command line names with the queue in them (goworker's compiled echo)."""
    return [Path(part) for part in kind.argv(queue) if queue in part and Path(part).is_absolute()]
