"""Bad `on_error` / `on_cancel` branches give one line per problem, naming the branch step."""

from __future__ import annotations

import textwrap

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.errors import ConfigError


def problems_of(text: str) -> list[str]:
    """The problem lines parse_workflows reports for `text` (which must be invalid)."""
    with pytest.raises(ConfigError) as info:
        parse_workflows(textwrap.dedent(text), "wf.yaml")
    return info.value.problems


UNIQUE = (
    "names must be unique across steps, on_error and on_cancel, as replies find their step by name"
)

# (id, YAML, the exact problem lines expected, in order)
CASES = [
    (
        "unknown dependency within the branch",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error:
              - {name: alert}
              - {name: page, depends: [alrt]}
        """,
        [
            "wf.yaml:6: workflow 'w', on_error step 'page': depends on unknown step 'alrt'"
            " (known: alert); did you mean 'alert'?"
        ],
    ),
    (
        "branch step depends on a main step",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error:
              - name: alert
                depends: [a]
        """,
        [
            "wf.yaml:6: workflow 'w', on_error step 'alert': depends on 'a', a main step:"
            " on_error steps may depend only on other on_error steps (no other on_error steps)"
        ],
    ),
    (
        "branch step depends on a step of the other branch",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error: [{name: alert}]
            on_cancel:
              - {name: tidy}
              - {name: notify, depends: [tidy, alert]}
        """,
        [
            "wf.yaml:7: workflow 'w', on_cancel step 'notify': depends on 'alert',"
            " an on_error step: on_cancel steps may depend only on other on_cancel steps"
            " (known: tidy)"
        ],
    ),
    (
        "main step depends on a branch step",
        """\
        workflows:
          - name: w
            steps:
              - {name: a}
              - {name: b, depends: [a, tidy]}
            on_cancel: [{name: tidy}]
        """,
        [
            "wf.yaml:5: workflow 'w', step 'b': depends on 'tidy', an on_cancel step:"
            " main steps cannot depend on on_error or on_cancel steps (known: a)"
        ],
    ),
    (
        "cycle within a branch, self dependency",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error:
              - {name: alert, depends: [page]}
              - {name: page, depends: [alert]}
            on_cancel:
              - {name: tidy, depends: [tidy]}
        """,
        [
            "wf.yaml:5: workflow 'w', on_error step 'alert': dependency cycle:"
            " alert -> page -> alert (each step needs the one before it)",
            "wf.yaml:8: workflow 'w', on_cancel step 'tidy': depends on itself;"
            " remove 'tidy' from depends",
        ],
    ),
    (
        "duplicate names within a branch",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error:
              - name: alert
              - name: alert
        """,
        [
            "wf.yaml:6: workflow 'w', on_error step 'alert':"
            " duplicate step name 'alert' (first at line 5)"
        ],
    ),
    (
        "branch step named like a main step",
        """\
        workflows:
          - name: w
            steps:
              - name: a
            on_error:
              - name: a
        """,
        [
            "wf.yaml:6: workflow 'w', on_error step 'a': step name 'a' is already used by"
            f" a main step (line 4); {UNIQUE}"
        ],
    ),
    (
        "on_cancel step named like an on_error step, wherever it is written",
        """\
        workflows:
          - name: w
            on_cancel: [{name: notify}]
            steps: [{name: a}]
            on_error: [{name: notify}]
        """,
        [
            "wf.yaml:3: workflow 'w', on_cancel step 'notify': step name 'notify' is already"
            f" used by an on_error step (line 5); {UNIQUE}"
        ],
    ),
    (
        "unknown task in a branch step",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error: [{name: alert, task: notfy}]
            on_cancel: [{name: tidy, task: t}]
            tasks:
              - {name: notify, itemListKey: people, steps: [{name: send}]}
        """,
        [
            "wf.yaml:4: workflow 'w', on_error step 'alert': uses unknown task 'notfy'"
            " (known: notify); did you mean 'notify'?",
            "wf.yaml:5: workflow 'w', on_cancel step 'tidy': uses unknown task 't' (known: notify)",
        ],
    ),
    (
        "branch written as a name, step written as a name, step without a name",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error: alert
            on_cancel:
              - tidy
              - queue: cleanup
        """,
        [
            "wf.yaml:4: workflow 'w': on_error: expected a list, got 'alert';"
            " write a list of steps: [{name: alert}]",
            "wf.yaml:6: workflow 'w', on_cancel step #1: expected a mapping, got 'tidy';"
            " write '- name: tidy'",
            "wf.yaml:7: workflow 'w', on_cancel step #2: missing required field 'name'",
        ],
    ),
    (
        "unknown field in a branch step",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error: [{name: alert, depend: []}]
        """,
        [
            "wf.yaml:4: workflow 'w', on_error step 'alert': unknown field 'depend' (allowed:"
            " name, depends, queue, task, http, retries, retry_backoff, timeout, when, wait,"
            " input_schema, output_schema, fallback, compensate, concurrency, rate, fairness,"
            " join, reduce); did you mean 'depends'?"
        ],
    ),
    (
        "misspelt branch",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_failure: [{name: alert}]
        """,
        [
            "wf.yaml:4: workflow 'w': unknown field 'on_failure' (allowed: name, steps,"
            " defaults, tasks, vhosts, timeout, on_error, on_cancel, payload_schema, unique,"
            " concurrency, rate, schedules, debounce, fairness, triggers); did you mean 'on_error'?"
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problem_lines(text: str, expected: list[str]) -> None:
    assert problems_of(text) == expected


def test_every_branch_problem_is_reported_at_once() -> None:
    text = """\
    workflows:
      - name: w
        steps: [{name: a}]
        on_error:
          - {name: a, depends: [tidy]}
          - {name: page, depends: [page], task: nope, retries: -1}
        on_cancel:
          - {name: tidy, depends: [a]}
    """
    found = problems_of(text)
    assert [line.split(":")[1] for line in found] == ["5", "5", "6", "6", "6", "8"]
    assert all(line.startswith("wf.yaml:") for line in found)


def test_names_may_repeat_across_workflows_and_tasks() -> None:
    text = """\
    workflows:
      - name: w
        steps: [{name: a, task: t}]
        on_error: [{name: alert, task: t}]
        tasks:
          - {name: t, itemListKey: xs, steps: [{name: alert}, {name: a}]}
      - name: v
        steps: [{name: alert}]
        on_error: [{name: a}]
        on_cancel: [{name: b, depends: []}]
    """
    workflows = parse_workflows(textwrap.dedent(text))
    assert list(workflows["w"].branches) == ["on_error"]
    assert [step.name for step in workflows["v"].branches["on_cancel"].steps] == ["b"]


def test_branch_steps_may_depend_on_each_other() -> None:
    text = """\
    workflows:
      - name: w
        steps: [{name: a}]
        on_error:
          - {name: page, depends: [alert]}
          - {name: alert}
    """
    branch = parse_workflows(textwrap.dedent(text))["w"].branches["on_error"]
    assert branch.dependents == {"page": (), "alert": ("page",)}
    assert branch.terminals == ("page",)
