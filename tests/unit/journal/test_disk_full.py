"""A commit that hits a full disk fails its batches and every later one: the manager must stop.

Two real ways to fill a disk: a 200 KiB tmpfs (needs root to mount; skipped otherwise), and a
file-size limit (RLIMIT_FSIZE) in a subprocess, which always runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.unit.journal.helpers import replied
from workflow_manager.errors import JournalError
from workflow_manager.journal import Batch, Journal, open_journal

ROOT = Path(__file__).resolve().parents[3]


async def _append_until_failure(journal: Journal) -> JournalError:
    body = b"x" * 2_000
    for i in range(10_000):
        try:
            await journal.append(Batch(events=[replied("a", body=body, at=float(i))]))
        except JournalError as exc:
            return exc
    raise AssertionError("the disk never filled up")


async def test_disk_full_fails_the_commit_and_every_later_append(tmpfs):
    path = tmpfs("200k") / "journal.db"
    journal = await open_journal(path)
    try:
        error = await _append_until_failure(journal)
        assert str(error).startswith(f"journal write failed: disk full at {path}")
        assert journal.failure is not None

        later = journal.append(Batch(events=[replied("b")]))
        assert later.done()
        with pytest.raises(JournalError, match="disk full"):
            await later
        with pytest.raises(JournalError, match="disk full"):
            await journal.flush()
        with pytest.raises(JournalError, match="disk full"):
            await journal.save_definitions([("h", "wc", "{}")])
        # Everything committed before the failure is still readable.
        assert len(await journal.events_of("a")) > 0
        assert await journal.events_of("b") == []
    finally:
        await journal.close()


_FILE_SIZE_SCRIPT = """
import asyncio, json, os, resource, signal, sys
from workflow_manager.errors import JournalError
from workflow_manager.journal import Batch, EventRow, open_journal

async def main(path):
    journal = await open_journal(path)
    await journal.append(Batch(events=[EventRow(at=0.0, kind="replied", job_id="a")]))
    # Writes past the limit fail with EFBIG instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    biggest = max(os.path.getsize(os.path.join(os.path.dirname(path), n))
                  for n in os.listdir(os.path.dirname(path)))
    resource.setrlimit(resource.RLIMIT_FSIZE, (biggest + 100_000, resource.RLIM_INFINITY))
    report = {"committed": 0}
    for i in range(10_000):
        row = EventRow(at=float(i), kind="replied", job_id="a", body=b"x" * 2_000)
        try:
            await journal.append(Batch(events=[row]))
        except JournalError as exc:
            report["error"] = str(exc)
            break
        report["committed"] += 1
    later = journal.append(Batch(events=[EventRow(at=0.0, kind="replied", job_id="b")]))
    report["later_done_at_once"] = later.done()
    try:
        await later
    except JournalError as exc:
        report["later_error"] = str(exc)
    await journal.close()
    print(json.dumps(report))

asyncio.run(main(sys.argv[1]))
"""


def test_file_size_limit_fails_the_commit_and_every_later_append(tmp_path):
    path = tmp_path / f"journal-{uuid.uuid4().hex[:8]}.db"
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_FILE_SIZE_SCRIPT), str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)

    assert report["committed"] > 0
    assert report["error"].startswith(f"journal write failed: I/O error at {path}")
    assert report["later_done_at_once"] is True
    assert report["later_error"] == report["error"]
