"""`workflow-manager test WORKFLOW_FILE --fixtures FILE`: canned answers, the run as a table,
exit 0/1 by the expectations, 2 for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow_manager.cli import main

WORKFLOWS = """
workflows:
  - name: counting
    steps:
      - {name: split}
      - name: count
        depends: [split]
        retries: 2
        retry_backoff: {initial: 60, multiplier: 1, max: 60}
      - {name: approve, wait: true, depends: [count]}
"""

FIXTURES = """
job:
  workflow: counting
  payload: {text: "a b c"}
steps:
  split:
    - output: {words: [a, b, c]}
  count:
    - error: "worker crashed"
    - output: {count: 3}
      after: 30
signals:
  - {step: approve, payload: {ok: true, count: 3}}
expect:
  status: completed
  result: {ok: true, count: 3}
  steps:
    count: {status: completed, attempts: 2}
"""


def _files(tmp_path: Path, fixtures: str) -> tuple[str, str]:
    workflows = tmp_path / "workflows.yaml"
    workflows.write_text(WORKFLOWS)
    path = tmp_path / "counting.fixtures.yaml"
    path.write_text(fixtures)
    return str(workflows), str(path)


def test_a_run_that_meets_its_expectations_exits_0_and_prints_the_run(tmp_path, capsys):
    workflows, fixtures = _files(tmp_path, FIXTURES)
    assert main(["test", workflows, "--fixtures", fixtures], env={}) == 0
    out = capsys.readouterr().out
    assert "OK: job" in out and "completed" in out
    rows = [line.split() for line in out.splitlines()]
    # The failed attempt, then the retry after its 60 s backoff, answered 30 s later.
    assert ["count", "1", "retrying", "+0.0s", "+0.0s", "worker", "crashed"] in rows
    assert any(r[:3] == ["count", "2", "completed"] and r[4].startswith("+") for r in rows)


def test_each_unmet_expectation_is_named_and_exits_1(tmp_path, capsys):
    wrong = FIXTURES.replace("result: {ok: true, count: 3}", "result: {ok: true, count: 4}")
    wrong = wrong.replace("attempts: 2}", "attempts: 1}")
    workflows, fixtures = _files(tmp_path, wrong)
    assert main(["test", workflows, "--fixtures", fixtures], env={}) == 1
    out = capsys.readouterr().out
    assert 'job result is {"count": 3, "ok": true}, expected {"count": 4, "ok": true}' in out
    assert "step 'count' ran 2 attempt(s), expected 1" in out


@pytest.mark.parametrize(
    ("fixtures", "message"),
    [
        ("job: {workflow: counting}\nsteps: {split: [{output: {}, error: x}]}\n",
         "steps.split.0: Value error, give one of output, error or no_reply"),
        ("job: {workflow: nope}\n", "unknown workflow 'nope'"),
        ("jobs: {}\n", "job: Field required"),
        ("job: [\n", "not valid YAML or JSON"),
    ],
)  # fmt: skip
def test_a_bad_fixtures_file_exits_2_naming_the_problem(tmp_path, capsys, fixtures, message):
    workflows, path = _files(tmp_path, fixtures)
    assert main(["test", workflows, "--fixtures", path], env={}) == 2
    assert message in capsys.readouterr().err


def test_a_step_without_answers_is_named(tmp_path, capsys):
    workflows, fixtures = _files(tmp_path, "job: {workflow: counting}\n")
    assert main(["test", workflows, "--fixtures", fixtures], env={}) == 2
    assert (
        "step 'split' of workflow 'counting' was sent to queue 'split'" in capsys.readouterr().err
    )
