"""`validate` on a file with webhooks: it reads the file only, and warns of a missing secret."""

from __future__ import annotations

from workflow_manager.cli import main

FILE = """\
webhooks:
  - {name: gh, secret_env: WM_TEST_GH_SECRET, signature: github}
workflows:
  - name: w
    triggers: [{webhook: gh}]
    steps: [{name: a}]
"""


def test_validate_warns_of_an_unset_secret_and_says_ok(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WM_TEST_GH_SECRET", raising=False)
    path = tmp_path / "w.yaml"
    path.write_text(FILE)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "OK, 1 workflow(s)" in out
    assert "warning: webhook 'gh': WM_TEST_GH_SECRET is not set here" in err


def test_validate_is_quiet_when_the_secret_is_set(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WM_TEST_GH_SECRET", "s3cret-value")
    path = tmp_path / "w.yaml"
    path.write_text(FILE)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and "s3cret-value" not in out + err


def test_validate_fails_on_an_unknown_webhook(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(FILE.replace("{webhook: gh}", "{webhook: hg}"))
    assert main(["validate", str(path)]) == 1
    assert "unknown webhook 'hg' (declared: gh)" in capsys.readouterr().err
