"""load_workflows turns every unreadable file into a ConfigError naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workflow_manager.config import load_workflows
from workflow_manager.errors import ConfigError

GOOD = "workflows:\n  - name: w\n    steps: [{name: a}]\n"


def error_for(path: str | Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_workflows(path)
    [problem] = info.value.problems
    return problem


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert error_for(path) == f"{path}: no such file (looked for {path})"


def test_directory(tmp_path: Path) -> None:
    assert error_for(tmp_path) == f"{tmp_path}: is a directory; give the path of a YAML file"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(GOOD)
    path.chmod(0)
    assert error_for(path) == f"{path}: permission denied; cannot read the file"


def test_nul_in_path() -> None:
    assert error_for("bad\0name.yaml").startswith("bad\0name.yaml: cannot read the file: ")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("workflows:\n  - name: caf\xe9\n".encode("latin-1"))
    assert error_for(path) == f"{path}:2: not UTF-8 text (byte 0xe9); save the file as UTF-8"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert error_for(path) == f"{path}: the file is empty; expected a 'workflows:' list"


def test_problems_name_the_file_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "workflows.yaml").write_text(GOOD.replace("{name: a}", "{name: a, depends: [b]}"))
    monkeypatch.chdir(tmp_path)
    assert error_for("workflows.yaml") == (
        "workflows.yaml:3: workflow 'w', step 'a':"
        " depends on unknown step 'b' (no other steps here)"
    )


def test_utf8_with_bom_loads(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert list(load_workflows(path)) == ["w"]
