"""An open journal (a real SQLite file in the test's tmp_path, and a fresh PostgreSQL database:
`journal` runs a test on both), and small real filesystems."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.pgdatabase import PARAMS, fresh_database
from workflow_manager.journal import Journal, open_journal


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


@pytest.fixture(params=PARAMS)
def journal_url(request: pytest.FixtureRequest, journal_path: Path) -> Iterator[str]:
    """Where the journal is: the SQLite file's path, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        yield str(journal_path)
        return
    with fresh_database() as url:
        yield url


@pytest.fixture
async def journal(journal_url: str) -> AsyncIterator[Journal]:
    """An open journal of each kind: the test runs on SQLite and on PostgreSQL."""
    opened = await open_journal(journal_url)
    yield opened
    await opened.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database's URL (dropped after the test)."""
    with fresh_database() as url:
        yield url


@pytest.fixture
async def sqlite_journal(journal_path: Path) -> AsyncIterator[Journal]:
    """An open SQLite journal, for what only SQLite has (its file, its query plans)."""
    opened = await open_journal(journal_path)
    yield opened
    await opened.close()


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """mount(size, ro=False) -> a fresh tmpfs mount point; needs root, skips without it."""
    mounted: list[Path] = []

    def mount(size: str, *, ro: bool = False) -> Path:
        point = tmp_path / f"tmpfs{len(mounted)}"
        point.mkdir()
        options = f"size={size}" + (",ro" if ro else "")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        subprocess.run(["umount", str(point)], check=True)
