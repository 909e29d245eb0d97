"""An open journal on a real SQLite file in the test's tmp_path, and small real filesystems."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from manager.journal import Journal, open_journal


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


@pytest.fixture
async def journal(journal_path: Path) -> AsyncIterator[Journal]:
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
