"""Imports point inward: the pure engine and config never load I/O libraries."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import workflow_manager


@pytest.mark.parametrize("module", ["workflow_manager.engine", "workflow_manager.config"])
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
    code = "import sys, pyworker; print('workflow_manager' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The `manager` modules `module` imports anywhere (TYPE_CHECKING blocks and functions too).

    `from package import name` counts as importing `package.name` when that is a module.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return {name for name in found if name in known and name != module}


def test_no_import_cycles_in_the_manager():
    root = Path(workflow_manager.__file__).resolve().parent
    paths = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        paths[name] = path
    graph = {name: _imports(path, name, set(paths)) for name, path in paths.items()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*trail[trail.index(target) :], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []
