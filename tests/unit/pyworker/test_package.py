"""pyworker's public surface and its import boundary."""

from __future__ import annotations

import subprocess
import sys

import pyworker


def test_everything_in_all_is_importable():
    assert set(pyworker.__all__) <= set(dir(pyworker))
    assert {"Worker", "StepContext", "PyworkerError"} <= set(pyworker.__all__)


def test_every_pyworker_error_shares_one_root():
    errors = [
        getattr(pyworker, name)
        for name in pyworker.__all__
        if name.endswith(("Error", "Request", "Result"))
    ]

    assert all(issubclass(error, pyworker.PyworkerError) for error in errors)


def test_pyworker_never_imports_the_manager():
    code = (
        "import sys, pyworker, pyworker.cli, pyworker.loader; "
        "print(sorted(m for m in sys.modules "
        "if m == 'workflow_manager' or m.startswith('workflow_manager.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"
