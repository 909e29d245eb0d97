"""Loading a Worker from a MODULE:OBJECT target (the CLI's argument)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyworker import TargetError, Worker
from pyworker.loader import load_target

GOOD = """\
from pyworker import Worker
from {sibling} import VALUE

worker = Worker()
nested = type("Holder", (), {{"worker": worker}})
not_a_worker = 42


@worker.step("q")
def handle(data):
    return {{"value": VALUE}}
"""


@pytest.fixture
def target_dir(tmp_path: Path, unique: str) -> Iterator[tuple[Path, str]]:
    """A directory with a worker module and a sibling module, both with unique names."""
    module, sibling = f"workers_{unique}", f"sibling_{unique}"
    (tmp_path / f"{sibling}.py").write_text("VALUE = 7\n")
    (tmp_path / f"{module}.py").write_text(GOOD.format(sibling=sibling))
    (tmp_path / "empty_worker.py").write_text("from pyworker import Worker\nworker = Worker()\n")
    (tmp_path / "crashes.py").write_text("x = 1\nraise RuntimeError('boom at import')\n")
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    yield tmp_path, module
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        del sys.modules[name]


def test_a_file_target_loads_and_can_import_its_siblings(target_dir):
    directory, module = target_dir

    worker = load_target(f"{directory}/{module}.py:worker")

    assert isinstance(worker, Worker)
    assert worker.handlers["q"].func({}) == {"value": 7}
    assert load_target(f"{directory}/{module}.py:nested.worker") is worker


def test_a_dotted_target_loads_from_sys_path(target_dir, monkeypatch):
    directory, module = target_dir
    monkeypatch.syspath_prepend(str(directory))

    assert isinstance(load_target(f"{module}:worker"), Worker)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("{module}.py", "expected MODULE:OBJECT"),
        (":worker", "expected MODULE:OBJECT"),
        ("{module}.py:", "expected MODULE:OBJECT"),
        ("{dir}/nope.py:worker", "no such file"),
        ("{dir}/{module}.py:wrker", "has no attribute 'wrker' .Worker objects in it: worker."),
        ("{dir}/{module}.py:not_a_worker", "is a int, not a pyworker.Worker"),
        ("{dir}/empty_worker.py:worker", "has no steps"),
        ("{dir}/crashes.py:worker", r"RuntimeError: boom at import \(at .*crashes.py:2\)"),
        ("surely_not_a_module_xyz:worker", "no module named 'surely_not_a_module_xyz'"),
        ("json.surely_not_xyz:worker", "no module named 'json.surely_not_xyz'"),
    ],
)
def test_bad_targets_say_what_is_wrong(target_dir, target, message):
    directory, module = target_dir

    with pytest.raises(TargetError, match=message):
        load_target(target.format(dir=directory, module=module))
