"""The worked example of docs/guides/testing.md runs as written: its workflow file, its pytest
module (each test in it), and its fixtures file through `workflow-manager test`."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from docs_gen.examples import examples_in
from workflow_manager.cli import main

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "testing.md"


def _blocks() -> tuple[str, str, str]:
    examples = examples_in(GUIDE)
    workflow = next(e.code for e in examples if e.lang == "yaml" and e.not_run is None)
    module = next(e.code for e in examples if e.lang == "python")
    fixtures = next(e.code for e in examples if e.lang == "yaml" and e.not_run is not None)
    return workflow, module, fixtures


@pytest.fixture
def in_tmp(tmp_path: Path):
    workflow, _, _ = _blocks()
    (tmp_path / "workflows.yaml").write_text(workflow)
    here = os.getcwd()
    os.chdir(tmp_path)  # the example loads "workflows.yaml" from where it runs
    yield tmp_path
    os.chdir(here)


async def test_the_guides_test_module_passes(in_tmp: Path) -> None:
    _, module, _ = _blocks()
    namespace: dict[str, object] = {}
    exec(compile(module, str(GUIDE), "exec"), namespace)  # noqa: S102 (our own docs)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        assert inspect.iscoroutinefunction(test)
        await test()


def test_the_guides_fixtures_file_passes_workflow_manager_test(in_tmp: Path, capsys) -> None:
    _, _, fixtures = _blocks()
    (in_tmp / "daily-report.fixtures.yaml").write_text(fixtures)
    code = main(["test", "workflows.yaml", "--fixtures", "daily-report.fixtures.yaml"], env={})
    out = capsys.readouterr().out
    assert code == 0, out
    assert "OK: job" in out
