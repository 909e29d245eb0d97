"""Bad failure-handling fields (retries, retry_backoff, timeout, defaults, max_failed_items)
give one line each: file, line, place, field, the bad value and the fix."""

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


def one_step(fields: str) -> str:
    """A workflow whose one step `a` has the extra `fields` (a YAML flow mapping's inside)."""
    return f"workflows:\n  - name: w\n    steps:\n      - {{name: a, {fields}}}\n"


PLACE = "wf.yaml:4: workflow 'w', step 'a': "
RETRIES_NOTE = "; retries counts the attempts after the first"
TIMEOUT_NOTE = "; leave timeout out to wait without a limit"

# (id, the step's extra fields, the one problem expected after PLACE)
STEP_FIELDS = [
    (
        "negative retries",
        "retries: -1",
        f"retries: must be at least 0, got -1 (a number){RETRIES_NOTE}",
    ),
    ("too many retries", "retries: 1001", "retries: must be at most 1000, got 1001 (a number)"),
    ("fractional retries", "retries: 1.5", "retries: expected a whole number, got 1.5 (a number)"),
    ("retries as a float", "retries: 2.0", "retries: expected a whole number, got 2.0 (a number)"),
    ("retries as a word", "retries: three", "retries: expected a whole number, got 'three'"),
    (
        "retries as quoted text",
        "retries: '3'",
        "retries: expected a whole number, got '3'; write 3, without quotes or units",
    ),
    (
        "retries as a YAML boolean",
        "retries: yes",
        "retries: expected a whole number, got true (a boolean)",
    ),
    ("retries as a list", "retries: [1]", "retries: expected a whole number, got a list"),
    (
        "zero timeout",
        "timeout: 0",
        f"timeout: must be more than 0 seconds, got 0 (a number){TIMEOUT_NOTE}",
    ),
    (
        "negative timeout",
        "timeout: -2.5",
        f"timeout: must be more than 0 seconds, got -2.5 (a number){TIMEOUT_NOTE}",
    ),
    (
        "timeout with a unit",
        "timeout: 30s",
        "timeout: expected a number of seconds, got '30s'; write 30, without quotes or units",
    ),
    (
        "timeout as quoted text",
        "timeout: '1.5'",
        "timeout: expected a number of seconds, got '1.5'; write 1.5, without quotes or units",
    ),
    ("timeout as text", "timeout: soon", "timeout: expected a number of seconds, got 'soon'"),
    (
        "infinite timeout",
        "timeout: .inf",
        "timeout: must be a finite number of seconds, got inf (a number)",
    ),
    (
        "backoff multiplier below 1",
        "retry_backoff: {multiplier: 0.5}",
        "retry_backoff.multiplier: must be at least 1, got 0.5 (a number);"
        " 1 keeps every wait the same",
    ),
    (
        "negative initial backoff",
        "retry_backoff: {initial: -1}",
        "retry_backoff.initial: must be at least 0 seconds, got -1 (a number)",
    ),
    (
        "negative max backoff",
        "retry_backoff: {max: -60}",
        "retry_backoff.max: must be at least 0 seconds, got -60 (a number)",
    ),
    (
        "backoff as a number",
        "retry_backoff: 5",
        "retry_backoff: expected a mapping, got 5 (a number);"
        " write retry_backoff: {initial: 1, multiplier: 2, max: 60}",
    ),
    (
        "misspelt backoff field",
        "retry_backoff: {intial: 2}",
        "unknown field 'intial' (allowed: initial, multiplier, max); did you mean 'initial'?",
    ),
    (
        "misspelt retries",
        "retry: 3",
        "unknown field 'retry' (allowed: name, depends, queue, task, http, retries, retry_backoff,"
        " timeout, when, wait, input_schema, output_schema, fallback, compensate,"
        " concurrency, rate, fairness, join, reduce); did you mean"
        " 'retries'?",
    ),
    (
        "backoff without its prefix",
        "backoff: {initial: 1}",
        "unknown field 'backoff' (allowed: name, depends, queue, task, http, retries,"
        " retry_backoff, timeout, when, wait, input_schema, output_schema, fallback, compensate,"
        " concurrency, rate, fairness, join, reduce);"
        " did you mean 'retry_backoff'?",
    ),
]


@pytest.mark.parametrize(
    ("fields", "expected"), [c[1:] for c in STEP_FIELDS], ids=[c[0] for c in STEP_FIELDS]
)
def test_bad_step_policy_fields(fields: str, expected: str) -> None:
    assert problems_of(one_step(fields)) == [PLACE + expected]


# (id, YAML, the exact problem lines expected, in order)
CASES = [
    (
        "workflow defaults: misspelt field, bad values",
        """\
        workflows:
          - name: w
            defaults:
              retrys: 3
              timeout: 0
              retry_backoff: {multiplier: 0}
            steps: [{name: a}]
        """,
        [
            "wf.yaml:4: workflow 'w': unknown field 'retrys'"
            " (allowed: retries, retry_backoff, timeout); did you mean 'retries'?",
            "wf.yaml:5: workflow 'w': defaults.timeout: must be more than 0 seconds,"
            f" got 0 (a number){TIMEOUT_NOTE}",
            "wf.yaml:6: workflow 'w': defaults.retry_backoff.multiplier: must be at least 1,"
            " got 0 (a number); 1 keeps every wait the same",
        ],
    ),
    (
        "task defaults and max_failed_items",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: t}]
            tasks:
              - name: t
                itemListKey: xs
                max_failed_items: -1
                defaults:
                  retries: -2
                  retry_backoff: {intial: 1, max: '1m'}
                steps: [{name: b}]
        """,
        [
            "wf.yaml:7: workflow 'w', task 't': max_failed_items: must be at least 0,"
            " got -1 (a number)",
            "wf.yaml:9: workflow 'w', task 't': defaults.retries: must be at least 0,"
            f" got -2 (a number){RETRIES_NOTE}",
            "wf.yaml:10: workflow 'w', task 't': defaults.retry_backoff.max:"
            " expected a number of seconds, got '1m'",
            "wf.yaml:10: workflow 'w', task 't': unknown field 'intial'"
            " (allowed: initial, multiplier, max); did you mean 'initial'?",
        ],
    ),
    (
        "max_failed_items not a whole number",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: t}]
            tasks:
              - {name: t, itemListKey: xs, max_failed_items: 0.5, steps: [{name: b}]}
        """,
        [
            "wf.yaml:5: workflow 'w', task 't': max_failed_items: expected a whole number,"
            " got 0.5 (a number)"
        ],
    ),
    (
        "step policy fields written on the workflow or the task",
        """\
        workflows:
          - name: w
            retries: 3
            retry_backoff: {initial: 1}
            steps: [{name: a, task: t}]
            tasks:
              - {name: t, itemListKey: xs, timeout: 5, steps: [{name: b}]}
        """,
        [
            "wf.yaml:3: workflow 'w': unknown field 'retries' (allowed: name, steps, defaults,"
            " tasks, vhosts, timeout, on_error, on_cancel, payload_schema, unique, concurrency,"
            " rate, schedules, debounce, fairness, triggers);"
            " to set retries for every step of the workflow, put it under 'defaults:'",
            "wf.yaml:4: workflow 'w': unknown field 'retry_backoff' (allowed: name, steps,"
            " defaults, tasks, vhosts, timeout, on_error, on_cancel, payload_schema, unique,"
            " concurrency, rate, schedules, debounce, fairness, triggers);"
            " to set retry_backoff for every step of the workflow, put it under 'defaults:'",
            "wf.yaml:7: workflow 'w', task 't': unknown field 'timeout' (allowed: name, steps,"
            " defaults, itemListKey, itemKey, max_failed_items, max_in_flight, payload_schema);"
            " to set timeout for every step of the task, put it under 'defaults:'",
        ],
    ),
    (
        "workflow timeout",
        """\
        workflows:
          - {name: w, timeout: -1, steps: [{name: a}]}
          - {name: v, timeout: 1h, steps: [{name: a}]}
        """,
        [
            "wf.yaml:2: workflow 'w': timeout: must be more than 0 seconds,"
            f" got -1 (a number){TIMEOUT_NOTE}",
            "wf.yaml:3: workflow 'v': timeout: expected a number of seconds, got '1h'",
        ],
    ),
    (
        "defaults not a mapping",
        """\
        workflows:
          - {name: w, defaults: 3, steps: [{name: a}]}
        """,
        ["wf.yaml:2: workflow 'w': defaults: expected a mapping, got 3 (a number)"],
    ),
    (
        "branch step policy",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            on_error:
              - {name: alert, timeout: 0, retries: -1}
            on_cancel:
              - {name: tidy, retry_backoff: {multiplier: 0.9}}
        """,
        [
            "wf.yaml:5: workflow 'w', on_error step 'alert': retries: must be at least 0,"
            f" got -1 (a number){RETRIES_NOTE}",
            "wf.yaml:5: workflow 'w', on_error step 'alert': timeout: must be more than 0"
            f" seconds, got 0 (a number){TIMEOUT_NOTE}",
            "wf.yaml:7: workflow 'w', on_cancel step 'tidy': retry_backoff.multiplier:"
            " must be at least 1, got 0.9 (a number); 1 keeps every wait the same",
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problem_lines(text: str, expected: list[str]) -> None:
    assert problems_of(text) == expected
