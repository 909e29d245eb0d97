"""Imports point inward: the pure engine and config never load I/O libraries."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import amqp_outage
import payload_refs
import pyworker
import workflow_manager
from tests.pysource import parse


def _loaded_after(imports: str, modules: tuple[str, ...]) -> list[str]:
    """Those of `modules` a fresh interpreter has loaded once it has run `imports`."""
    code = f"import sys\n{imports}\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return [name for name in result.stdout.strip().split(",") if name]


@pytest.mark.parametrize("module", ["workflow_manager.engine", "workflow_manager.config"])
def test_pure_packages_load_no_io_library(module):
    io = ("aio_pika", "aiormq", "aiosqlite", "fastapi", "httpx", "uvicorn")
    assert _loaded_after(f"import {module}", io) == []


def test_a_manager_loads_no_http_server_before_it_consumes():
    # Everything `serve` imports up to its queues' consumers: FastAPI and uvicorn come after
    # (workflow_manager.api.serving), so a restarted manager takes its work back sooner.
    imports = (
        "import workflow_manager.cli, workflow_manager.server, workflow_manager.term\n"
        "from workflow_manager.api.token import ApiToken"
    )
    http = ("fastapi", "starlette", "uvicorn", "workflow_manager.api.app")
    assert _loaded_after(imports, http) == []
    # The helper sees what is loaded: the HTTP API's own module loads them.
    assert _loaded_after("import workflow_manager.api.serving", http) == list(http)


def test_a_manager_loads_no_conformance_kit_or_simulation_for_its_parser():
    # The command line builds every subcommand's parser; their packages' other modules load
    # only when their names are read.
    imports = "import workflow_manager.cli, workflow_manager.server, workflow_manager.term"
    kits = (
        "workflow_manager.conformance.model",
        "workflow_manager.conformance.report",
        "workflow_manager.testing.simulation",
        "workflow_manager.testing.views",
    )
    assert _loaded_after(imports, kits) == []
    loaded = "from workflow_manager.conformance import Report, Verdict\n" + (
        "from workflow_manager.testing import Simulation"
    )
    assert _loaded_after(loaded, kits) == list(kits)


def test_the_command_line_loads_no_engine_nor_pydantic_until_a_command_needs_them():
    # Every CLI call builds the whole parser first; a `status` or `--help` needs neither.
    heavy = ("workflow_manager.engine.engine", "workflow_manager.config.models", "pydantic")
    assert _loaded_after("import workflow_manager.cli", heavy) == []
    assert _loaded_after("from workflow_manager.engine import apply", heavy) == list(heavy)


def test_each_engine_name_is_the_one_its_import_for_the_checker_names():
    # The package's __getattr__ looks its names up in `_HOMES`; the imports under
    # TYPE_CHECKING say where each one is defined, and the two must agree.
    from workflow_manager import engine

    tree = ast.parse(Path(engine.__file__).read_text())
    homes = {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
        if node.module.startswith("workflow_manager.engine.")
    }
    assert sorted(homes) == sorted(engine.__all__)
    assert {module.rsplit(".", 1)[1] for module in homes.values()} == set(engine._HOMES)
    for name, home in homes.items():
        assert getattr(engine, name) is getattr(importlib.import_module(home), name), name


@pytest.mark.parametrize(
    ("package", "name", "home"),
    [
        ("workflow_manager.engine", "apply", "workflow_manager.engine.engine"),
        ("workflow_manager.engine", "EngineState", "workflow_manager.engine.state"),
        ("workflow_manager.api", "create_app", "workflow_manager.api.app"),
        ("workflow_manager.api", "ApiToken", "workflow_manager.api.token"),
        ("workflow_manager.conformance", "run_conformance", "workflow_manager.conformance.runner"),
        ("workflow_manager.conformance", "KitSettings", "workflow_manager.conformance.settings"),
        ("workflow_manager.testing", "Simulation", "workflow_manager.testing.simulation"),
        ("workflow_manager.testing", "NoReply", "workflow_manager.testing.handlers"),
    ],
)
def test_a_package_name_loads_on_first_use(package, name, home):
    loaded = importlib.import_module(package)
    assert getattr(loaded, name) is getattr(importlib.import_module(home), name)
    assert name in loaded.__all__ and name in vars(loaded)  # kept: the next read is plain
    with pytest.raises(AttributeError, match=f"no attribute '{name}x'"):
        getattr(loaded, f"{name}x")  # a misspelt name is an AttributeError, as without laziness


def test_pyworker_does_not_import_the_manager():
    assert _loaded_after("import pyworker", ("workflow_manager",)) == []


# The manager and pyworker meet only in the shared layer below both: `amqp_outage` (reconnects
# and outages) and `payload_refs` (the payload reference format and stores), with two
# exceptions on purpose, each a package that runs pyworker's handlers: the manager's HTTP
# bridge *is* a pyworker worker (it serves `http:` steps with pyworker's Worker, StepContext
# and errors), and `workflow_manager.testing` runs a workflow's pyworker handlers in a
# simulated run. The conformance kit runs pyworker as a command, never imports it.
MANAGER_PACKAGES_ON_PYWORKER = ("workflow_manager.bridge", "workflow_manager.testing")


def _package_imports(package: ModuleType) -> dict[str, set[str]]:
    """Each module of `package` and the top-level packages it imports anywhere (absolute
    imports only: a relative one stays inside the package)."""
    root = Path(package.__file__).resolve().parent
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tops: set[str] = set()
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, ast.Import):
                tops.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                tops.add(node.module.split(".")[0])
        found[name] = tops
    return found


def test_the_manager_imports_pyworker_only_where_it_runs_pyworker_handlers():
    on_pyworker = {
        name for name, tops in _package_imports(workflow_manager).items() if "pyworker" in tops
    }
    assert "workflow_manager.bridge.service" in on_pyworker  # the scan sees what is there
    elsewhere = {
        name
        for name in on_pyworker
        if not any(name.startswith(f"{package}.") for package in MANAGER_PACKAGES_ON_PYWORKER)
        and name not in MANAGER_PACKAGES_ON_PYWORKER
    }
    assert elsewhere == set()


def test_pyworker_imports_no_manager_module():
    assert [n for n, tops in _package_imports(pyworker).items() if "workflow_manager" in tops] == []


@pytest.mark.parametrize("shared", [amqp_outage, payload_refs], ids=lambda p: p.__name__)
def test_the_shared_layer_imports_neither_package(shared: ModuleType):
    imported = set().union(*_package_imports(shared).values())
    assert imported & {"workflow_manager", "pyworker"} == set()


def test_the_payload_stores_load_no_broker_client_nor_postgresql_until_used():
    code = (
        "import sys, payload_refs\n"
        "print(','.join(m for m in ('aio_pika', 'aiormq', 'psycopg') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_the_broker_adapter_reconnects_through_the_shared_layer_not_pyworker():
    code = (
        "import sys, workflow_manager.transport.broker\n"
        "print(','.join(m for m in ('amqp_outage', 'pyworker') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "amqp_outage"


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The `workflow_manager` modules `module` imports anywhere (TYPE_CHECKING blocks and
    functions too).

    `from package import name` counts as importing `package.name` when that is a module.
    """
    found: set[str] = set()
    for node in ast.walk(parse(path.read_text())):
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
