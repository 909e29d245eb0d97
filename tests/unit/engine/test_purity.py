"""The engine stays pure: no I/O libraries loaded, no clock, no randomness, no id minting."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import workflow_manager.engine
from tests.pysource import parse
from workflow_manager.engine import EngineState, apply

ENGINE_DIR = Path(workflow_manager.engine.__file__).resolve().parent
ROOT = ENGINE_DIR.parent.parent


def test_importing_the_engine_loads_no_io_library():
    probe = (
        "import sys, workflow_manager.engine; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'aio_pika', 'aiormq', 'aiosqlite', 'sqlite3', 'fastapi', 'starlette', 'httpx', "
        "'uvicorn'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


FORBIDDEN_MODULES = {"asyncio", "time", "datetime", "random", "os", "socket", "secrets"}
FORBIDDEN_NAMES = {"uuid1", "uuid4", "time", "now", "monotonic", "random", "urandom"}


@pytest.mark.parametrize("module", sorted(p.name for p in ENGINE_DIR.glob("*.py")))
def test_engine_modules_use_no_clock_randomness_or_io(module):
    tree = parse((ENGINE_DIR / module).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not {name.split(".")[0] for name in imported} & FORBIDDEN_MODULES
    ours = {name for name in imported if name.split(".")[0] == "workflow_manager"}
    assert all(
        name.startswith(("workflow_manager.config", "workflow_manager.engine")) for name in ours
    ), ours
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not attributes & FORBIDDEN_NAMES


def test_apply_refuses_something_that_is_not_an_event():
    state = EngineState.from_workflows({})
    with pytest.raises(TypeError, match="not an engine event"):
        apply(state, "JobSubmitted")  # type: ignore[arg-type]
