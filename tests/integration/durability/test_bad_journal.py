"""A journal the manager cannot use stops it at once with one clear line, and nothing is lost.

Each case runs `python -m workflow_manager serve` with a valid workflow file: the process must exit
non-zero within seconds, print one `error:` line on stderr that names the file and the
problem, and no traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import uuid
from contextlib import closing
from pathlib import Path

import aio_pika
import pytest

from workflow_manager.journal import open_journal

from .helpers import Child, read_jobs

EXIT_TIMEOUT_S = 20.0
DEFINITIONS = 1000  # rows enough for a journal of ~100 pages


@pytest.fixture
def journal_kind() -> str:
    """These tests are about SQLite files; test_bad_pg_journal.py has PostgreSQL's."""
    return "sqlite"


async def serve(rig, db: Path) -> Child:
    return await Child.start(*rig.serve_args(db=db))


async def refused(rig, db: Path, *words: str) -> str:
    """Serve on `db`; it must refuse quickly with one `error:` line holding `db` and `words`."""
    finished = await (await serve(rig, db)).wait(EXIT_TIMEOUT_S)
    lines = finished.error_lines
    assert finished.returncode != 0, finished.stderr
    assert finished.elapsed_s < 15, f"took {finished.elapsed_s:.1f}s to refuse"
    assert "Traceback" not in finished.stderr, finished.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), finished.stderr
    for word in (str(db), *words):
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    return lines[0]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def real_journal(path: Path) -> None:
    """A journal made by the manager's own code, with enough rows to span many pages."""
    journal = await open_journal(path)
    rows = (
        (f"h{i:05d}", f"wf{i}", json.dumps({"i": i, "pad": "x" * 300})) for i in range(DEFINITIONS)
    )
    await journal.save_definitions(rows)
    await journal.close()
    assert not Path(f"{path}-wal").exists(), "close() should checkpoint the WAL into the file"


def garble_middle(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.seek(size // 2 // 4096 * 4096)
        file.write(random.Random(7).randbytes(4 * 4096))


def truncate_half(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def truncate_header(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(50)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (garble_middle, ["corrupted"]),
        (truncate_half, ["corrupted"]),
        (truncate_header, ["not a SQLite database"]),
    ],
    ids=["garbled-middle", "truncated-half", "truncated-header"],
)
async def test_corrupted_journal(rig, tmp_path, damage, words):
    db = tmp_path / "journal.db"
    await real_journal(db)
    damage(db)
    before = sha256(db)
    await refused(rig, db, *words)
    assert sha256(db) == before, "the manager changed a corrupted journal"


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
async def test_foreign_sqlite_file_is_left_untouched(rig, tmp_path, journal_mode):
    db = tmp_path / "crm.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA journal_mode = {journal_mode}")
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada'), ('Grace')")
        conn.commit()
    before = sha256(db)
    await refused(rig, db, "customers", "not a workflow-manager journal")
    assert sha256(db) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("crm")) == ["crm.db"]


async def test_journal_in_a_missing_directory(rig, tmp_path):
    db = tmp_path / "no-such-dir" / "wm.db"
    await refused(rig, db, str(db.parent), "does not exist")
    assert not db.parent.exists()


async def test_journal_path_is_a_directory(rig, tmp_path):
    db = tmp_path / "a-directory"
    db.mkdir()
    await refused(rig, db, "is a directory")
    assert list(db.iterdir()) == []


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 300 KiB tmpfs, unmounted after the test; skips where mounting is not permitted."""
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("the full-disk test mounts a tmpfs: it needs root and mount(8)")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mountpoint)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)


DISK_SIZE = "300k"
PAYLOAD_BYTES = 2_000  # journaled several times per job (payload, dispatches)
MAX_TRIGGERS = 100  # 4 MB of journal: far beyond the disk


async def test_full_disk_stops_the_manager_and_acks_nothing_unjournaled(rig, small_disk, tmp_path):
    db = small_disk / "wm.db"
    manager = await serve(rig, db)
    await manager.wait_for_stderr(r"HTTP API on", 30)
    split = await rig.channel.declare_queue(f"{rig.prefix}.split", durable=True)
    dispatched: asyncio.Queue[str | None] = asyncio.Queue()

    async def on_request(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await message.ack()
        dispatched.put_nowait(message.correlation_id)

    await split.consume(on_request)
    sent: list[str] = []
    try:
        # One job at a time: each trigger once the previous one's first step was dispatched
        # (so it was journaled), until the manager stops.
        while manager.proc.returncode is None and len(sent) < MAX_TRIGGERS:
            job_id = str(uuid.uuid4())
            sent.append(job_id)
            await rig.trigger("chaos-counts", {"n": len(sent), "pad": "x" * PAYLOAD_BYTES}, job_id)
            await _dispatched_or_exited(dispatched, f"{job_id}:split", manager)
        finished = await manager.wait(EXIT_TIMEOUT_S)
    finally:
        await manager.kill()

    assert finished.returncode != 0, finished.stderr
    assert "Traceback" not in finished.stderr, finished.stderr
    last = finished.error_lines[-1]
    assert last.startswith("error: ") and "disk full" in last and str(db) in last, finished.stderr

    # What the journal holds, read from a copy (the full disk has no room for SQLite's -shm).
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in small_disk.iterdir():
        if path.name in ("wm.db", "wm.db-wal"):
            shutil.copy(path, copy / path.name)
    journaled = {job_id for job_id, parent, _ in read_jobs(copy / "wm.db") if parent is None}
    queued = await _drain_triggers(rig)
    assert journaled <= set(sent)
    assert journaled, "the disk filled before the first job: make PAYLOAD_BYTES smaller"
    assert queued, "the manager stopped with no trigger left unjournaled"
    lost = set(sent) - journaled - queued
    assert not lost, f"acked but never journaled: {sorted(lost)} (journaled {len(journaled)})"


async def _dispatched_or_exited(
    dispatched: asyncio.Queue[str | None], correlation_id: str, manager: Child
) -> None:
    """Wait until the request `correlation_id` was dispatched, or the manager has exited."""
    exited = asyncio.ensure_future(manager.proc.wait())
    got: asyncio.Future[str | None] | None = None
    try:
        async with asyncio.timeout(EXIT_TIMEOUT_S):
            while not exited.done():
                got = asyncio.ensure_future(dispatched.get())
                await asyncio.wait({got, exited}, return_when=asyncio.FIRST_COMPLETED)
                if got.done() and got.result() == correlation_id:
                    return
    except TimeoutError:
        raise AssertionError(
            f"{correlation_id} was neither dispatched nor did the manager stop in "
            f"{EXIT_TIMEOUT_S}s; stderr:\n{manager.stderr}"
        ) from None
    finally:
        for future in (got, exited):
            if future is not None:
                future.cancel()


async def _drain_triggers(rig) -> set[str]:
    """Ids of the triggers waiting in the trigger queue, once no consumer holds any."""
    async with asyncio.timeout(EXIT_TIMEOUT_S):
        while True:
            queue = await rig.channel.declare_queue(rig.trigger_queue, passive=True)
            if queue.declaration_result.consumer_count == 0:
                break
            await asyncio.sleep(0.05)  # poll until the dead manager's consumer is gone
    waiting = queue.declaration_result.message_count
    ids: set[str] = set()
    while (message := await queue.get(fail=False)) is not None:
        ids.add(message.correlation_id)
        await message.ack()
    assert len(ids) == waiting
    return ids
