"""Imports point inward: the pure engine and config never load I/O libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["manager.engine", "manager.config"])
def test_pure_packages_load_no_io_library(module):
    code = (
        f"import sys, {module}\n"
        "loaded = [m for m in ('aio_pika', 'aiormq', 'aiosqlite', 'fastapi', 'httpx', 'uvicorn')"
        " if m in sys.modules]\n"
        "print(','.join(loaded))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_pyworker_does_not_import_the_manager():
    code = "import sys, pyworker; print('manager' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
