"""The command line's bounds: serve --max-running-jobs and submit --priority."""

from __future__ import annotations

import pytest

from workflow_manager.cli import main


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--max-running-jobs", "0"], {}),
        (["--max-running-jobs", "many"], {}),
        ([], {"WM_MAX_RUNNING_JOBS": "-3"}),
    ],
)
def test_a_bad_max_running_jobs_is_a_usage_error_naming_it(argv, env, capsys):
    assert main(["serve", *argv], env=env) == 2
    assert "--max-running-jobs (or WM_MAX_RUNNING_JOBS) must be a whole number" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("value", ["10", "-1", "high"])
def test_a_bad_priority_is_a_usage_error_naming_it(value, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["submit", "w", "--priority", value], env={})
    assert exited.value.code == 2
    assert f"'{value}' is not a priority (an integer from 0 to 9" in capsys.readouterr().err
