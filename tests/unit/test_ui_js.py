"""The web UI's JavaScript is checked too: ESLint over workflow_manager/ui and node's test runner
over the unit tests of its pure modules (format.js, dag.js's layout), both from ui-tests/.

ui-tests/ holds the tooling (package.json, package-lock.json, eslint.config.js) and the tests,
so nothing is added to the folder the manager serves; scripts/setup.sh runs `npm ci` there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

UI_TESTS = Path(__file__).resolve().parents[2] / "ui-tests"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="Node.js is not installed (scripts/setup.sh installs it)",
)


def _run(*command: str) -> None:
    """Run `command` in ui-tests/; fail with its whole output unless it exits 0."""
    if not (UI_TESTS / "node_modules").is_dir():
        pytest.fail("ui-tests/node_modules is missing: run `npm ci` in ui-tests (scripts/setup.sh)")
    result = subprocess.run(
        command, cwd=UI_TESTS, capture_output=True, text=True, timeout=90, check=False
    )
    if result.returncode != 0:
        pytest.fail(
            f"`{' '.join(command)}` exited {result.returncode}:\n{result.stdout}\n{result.stderr}",
            pytrace=False,
        )


def test_the_ui_javascript_passes_eslint():
    # `npm run lint` runs ESLint from the repository's root with ui-tests/eslint.config.js.
    _run("npm", "run", "--silent", "lint")


def test_the_ui_javascript_unit_tests_pass():
    _run("node", "--test")
