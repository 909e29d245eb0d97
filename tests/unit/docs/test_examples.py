"""Every code example of README.md and docs/ runs, by its language (docs_gen.examples).

yaml: a workflow file the manager loads (`parse_workflows`, the validate command's parser).
python: compiles; one that builds a pyworker Worker is also run as a module (its steps
registered). js: `node --check`. sh: `bash -n`. json: parses. A block marked
`<!-- not run: why -->` is left alone; other languages (text, sql, go) are not run.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from docs_gen.examples import Example, doc_files, examples_in
from workflow_manager.config import parse_workflows

ROOT = Path(__file__).resolve().parents[3]
RUN_LANGUAGES = {"yaml", "python", "js", "sh", "json"}

EXAMPLES = [
    example
    for path in doc_files(ROOT)
    for example in examples_in(path)
    if example.lang in RUN_LANGUAGES and example.not_run is None
]


def by_lang(lang: str) -> list[pytest.param]:
    """The runnable examples of `lang`, each with its `file:line` as test id."""
    return [pytest.param(e, id=e.where) for e in EXAMPLES if e.lang == lang]


def test_the_readme_and_the_site_have_examples_of_each_kind() -> None:
    assert {example.lang for example in EXAMPLES} >= {"yaml", "python", "sh"}
    assert any(example.path.name == "README.md" for example in EXAMPLES)


@pytest.mark.parametrize("example", by_lang("yaml"))
def test_a_yaml_example_is_a_workflow_file_the_manager_loads(
    example: Example, tmp_path: Path
) -> None:
    # Schema files it names ({$ref: path}) are stood in for by an empty object schema.
    for ref in re.findall(r"\$ref:\s*([\w./-]+)", example.code):
        (tmp_path / ref).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / ref).write_text('{"type": "object"}')
    workflows = parse_workflows(example.code, example.where, tmp_path)
    assert workflows, f"{example.where}: no workflow in the example"


@pytest.mark.parametrize("example", by_lang("python"))
def test_a_python_example_compiles(example: Example) -> None:
    compile(example.code, example.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize(
    "example", [p for p in by_lang("python") if "from pyworker import" in p.values[0].code]
)
def test_a_worker_example_runs_and_registers_its_steps(example: Example) -> None:
    namespace = run_module(example)
    workers = [value for value in namespace.values() if type(value).__name__ == "Worker"]
    assert workers and all(worker.handlers for worker in workers), example.where


@pytest.mark.parametrize("example", by_lang("json"))
def test_a_json_example_parses(example: Example) -> None:
    json.loads(example.code)


@pytest.mark.parametrize("example", by_lang("sh"))
def test_a_shell_example_is_valid_shell(example: Example) -> None:
    checked = subprocess.run(
        ["bash", "-n"], input=example.code, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, f"{example.where}: {checked.stderr}"


@pytest.mark.parametrize("example", by_lang("js"))
def test_a_javascript_example_is_valid_javascript(example: Example, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (scripts/setup.sh installs it)")
    module = tmp_path / "example.mjs"
    module.write_text(example.code)
    checked = subprocess.run([node, "--check", str(module)], capture_output=True, text=True)
    assert checked.returncode == 0, f"{example.where}: {checked.stderr}"


def run_module(example: Example) -> dict[str, object]:
    """Run the example's code as a module (not as __main__, so a `worker.run()` stays off)."""
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(compile(example.code, example.where, "exec"), namespace)
    return namespace
