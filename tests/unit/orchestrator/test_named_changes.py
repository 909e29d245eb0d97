"""Only the pipeline changes the manager's memory: outside the engine, the engine's `apply` and
`replay` are imported by `workflow_manager.pipeline` and by the modules that build an engine
state of their own (never the one in memory), and by no other part of the driver."""

from __future__ import annotations

import ast
from pathlib import Path

import workflow_manager
from tests.pysource import parse

# Module -> why it may apply or replay events.
ALLOWED = {
    "workflow_manager.pipeline": "memory: each event, and the named changes outside one",
    "workflow_manager.recovery": "a fresh state replayed from the journal, handed to the pipeline",
    "workflow_manager.requests": "a job another manager runs, replayed into a state of its own",
    "workflow_manager.testing.simulation": "the test kit's own engine state",
    "workflow_manager.testing.replaying": "a state replayed from a journal file, for a test",
}


def _engine_changers() -> set[str]:
    root = Path(workflow_manager.__file__).resolve().parent
    found = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[1] == "engine":
            continue
        for node in ast.walk(parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "workflow_manager.engine"
                and any(alias.name in ("apply", "replay") for alias in node.names)
            ):
                found.add(".".join(parts))
    return found


def test_only_the_pipeline_changes_memory():
    assert _engine_changers() <= set(ALLOWED)
    assert "workflow_manager.pipeline" in _engine_changers()
