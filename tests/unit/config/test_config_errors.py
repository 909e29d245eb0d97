"""Every kind of bad workflow file gives one clear line per problem: file, line, names, fix."""

from __future__ import annotations

import textwrap

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.errors import ConfigError


def problems_of(text: str) -> list[str]:
    """The problem lines parse_workflows reports for `text` (which must be invalid)."""
    with pytest.raises(ConfigError) as info:
        parse_workflows(textwrap.dedent(text), "wf.yaml")
    assert str(info.value) == "\n".join(info.value.problems)
    return info.value.problems


BOOK = """\
workflows:
  - name: book-word-counts
    steps:
      - name: book-split
      - name: section-counts
        depends: [book-split]
      - name: sum-splits
        depends: [section-count]
      - name: store-title
"""

# (id, YAML, the exact problem lines expected, in order)
CASES = [
    (
        "unknown dependency",
        BOOK,
        [
            "wf.yaml:8: workflow 'book-word-counts', step 'sum-splits': depends on unknown step"
            " 'section-count' (known: book-split, section-counts, store-title);"
            " did you mean 'section-counts'?"
        ],
    ),
    (
        "unknown field near miss",
        """\
        workflows:
          - name: w
            steps:
              - name: a
              - name: b
                depend: [a]
        """,
        [
            "wf.yaml:6: workflow 'w', step 'b': unknown field 'depend'"
            " (allowed: name, depends, queue, task, http, retries, retry_backoff, timeout, when,"
            " wait, input_schema, output_schema, fallback, compensate,"
            " concurrency, rate, fairness, join, reduce); did you mean 'depends'?"
        ],
    ),
    (
        "unknown field, no near miss",
        """\
        workflows:
          - name: w
            priority: 3
            steps: [{name: a}]
        """,
        [
            "wf.yaml:3: workflow 'w': unknown field 'priority'"
            " (allowed: name, steps, defaults, tasks, vhosts, timeout, on_error, on_cancel,"
            " payload_schema, unique, concurrency, rate, schedules, debounce, fairness, triggers)"
        ],
    ),
    (
        "python field name instead of the alias",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: t}]
            tasks:
              - name: t
                item_list_key: xs
                steps: [{name: b}]
        """,
        [
            "wf.yaml:5: workflow 'w', task 't': missing 'itemListKey':"
            " the input key whose list the task runs over, once per item",
            "wf.yaml:6: workflow 'w', task 't': unknown field 'item_list_key'"
            " (allowed: name, steps, defaults, itemListKey, itemKey, max_failed_items,"
            " max_in_flight, payload_schema);"
            " did you mean 'itemListKey'?",
        ],
    ),
    (
        "itemListKey missing",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: t}]
            tasks:
              - name: t
                steps: [{name: b}]
        """,
        [
            "wf.yaml:5: workflow 'w', task 't': missing 'itemListKey':"
            " the input key whose list the task runs over, once per item"
        ],
    ),
    (
        "duplicate workflow",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
          - name: w
            steps: [{name: a}]
        """,
        ["wf.yaml:4: workflow 'w': duplicate workflow name 'w' (first at line 2)"],
    ),
    (
        "duplicate step in a workflow and in a task, duplicate task",
        """\
        workflows:
          - name: w
            steps:
              - name: a
                task: t
              - name: a
            tasks:
              - name: t
                itemListKey: xs
                steps: [{name: b}, {name: b}]
              - name: t
                itemListKey: ys
                steps: [{name: c}]
        """,
        [
            "wf.yaml:6: workflow 'w', step 'a': duplicate step name 'a' (first at line 4)",
            "wf.yaml:10: workflow 'w', task 't', step 'b':"
            " duplicate step name 'b' (first at line 10)",
            "wf.yaml:11: workflow 'w', task 't': duplicate task name 't' (first at line 8)",
        ],
    ),
    (
        "cycle, declared out of order",
        """\
        workflows:
          - name: w
            steps:
              - {name: start}
              - {name: c, depends: [b]}
              - {name: a, depends: [start, c]}
              - {name: b, depends: [a]}
        """,
        [
            "wf.yaml:5: workflow 'w', step 'c': dependency cycle: c -> a -> b -> c"
            " (each step needs the one before it)"
        ],
    ),
    (
        "two distinct cycles through one step, each reported once",
        """\
        workflows:
          - name: w
            steps:
              - {name: a, depends: [b, c]}
              - {name: b, depends: [a]}
              - {name: c, depends: [a]}
        """,
        [
            "wf.yaml:4: workflow 'w', step 'a': dependency cycle: a -> b -> a"
            " (each step needs the one before it)",
            "wf.yaml:4: workflow 'w', step 'a': dependency cycle: a -> c -> a"
            " (each step needs the one before it)",
        ],
    ),
    (
        "self dependency and duplicate dependency",
        """\
        workflows:
          - name: w
            steps:
              - name: a
              - name: b
                depends:
                  - a
                  - b
                  - a
        """,
        [
            "wf.yaml:8: workflow 'w', step 'b': depends on itself; remove 'b' from depends",
            "wf.yaml:9: workflow 'w', step 'b': lists 'a' twice in depends; keep one",
        ],
    ),
    (
        "unknown task",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: word-count}]
            tasks:
              - {name: word-counts, itemListKey: sections, steps: [{name: b}]}
        """,
        [
            "wf.yaml:3: workflow 'w', step 'a': uses unknown task 'word-count'"
            " (known: word-counts); did you mean 'word-counts'?"
        ],
    ),
    (
        "task step in a workflow without tasks",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: t}]
        """,
        [
            "wf.yaml:3: workflow 'w', step 'a': uses unknown task 't'"
            " (this workflow defines no tasks)"
        ],
    ),
    (
        "task recursion through another task",
        """\
        workflows:
          - name: w
            steps: [{name: top, task: A}]
            tasks:
              - name: A
                itemListKey: xs
                steps: [{name: s1, task: B}]
              - name: B
                itemListKey: ys
                steps: [{name: s2, task: A}]
        """,
        [
            "wf.yaml:7: workflow 'w', task 'A', step 's1': task recursion:"
            " task 'A' step 's1' -> task 'B' step 's2' -> task 'A'; a task cannot run itself"
        ],
    ),
    (
        "task using itself",
        """\
        workflows:
          - name: w
            steps: [{name: top, task: A}]
            tasks:
              - name: A
                itemListKey: xs
                steps:
                  - name: again
                    task: A
        """,
        [
            "wf.yaml:9: workflow 'w', task 'A', step 'again': task recursion:"
            " task 'A' step 'again' -> task 'A'; a task cannot run itself"
        ],
    ),
    (
        "empty and missing steps",
        """\
        workflows:
          - name: w
            steps: []
            tasks:
              - {name: t, itemListKey: xs}
          - name: v
        """,
        [
            "wf.yaml:3: workflow 'w': 'steps' is empty: a workflow needs at least one step",
            "wf.yaml:5: workflow 'w', task 't': 'steps' is missing: a task needs at least one step",
            "wf.yaml:6: workflow 'v': 'steps' is missing: a workflow needs at least one step",
        ],
    ),
    (
        "invalid names",
        """\
        workflows:
          - name: 9lives
            steps:
              - name: two words
              - name: b
                depends: [a.b]
        """,
        [
            "wf.yaml:2: workflow '9lives': name: invalid name '9lives':"
            " a name is a letter, then letters, digits, '_' or '-'",
            "wf.yaml:4: workflow '9lives', step 'two words': name: invalid name 'two words':"
            " a name is a letter, then letters, digits, '_' or '-'",
            "wf.yaml:6: workflow '9lives', step 'b': depends[0]: invalid name 'a.b':"
            " a name is a letter, then letters, digits, '_' or '-'",
        ],
    ),
    (
        "wrong types",
        """\
        workflows:
          - name: yes
            steps:
              - name: 5
              - name: b
                depends: a
              - just-a-name
            vhosts: [1]
        """,
        [
            "wf.yaml:2: workflow #1: name: expected a string, got true (a boolean);"
            " put it in quotes to make it text",
            "wf.yaml:4: workflow #1, step #1: name: expected a string, got 5 (a number);"
            " put it in quotes to make it text",
            "wf.yaml:6: workflow #1, step 'b': depends: expected a list, got 'a'; write [a]",
            "wf.yaml:7: workflow #1, step #3: expected a mapping, got 'just-a-name';"
            " write '- name: just-a-name'",
            "wf.yaml:8: workflow #1: vhosts[0]: expected a string, got 1 (a number);"
            " put it in quotes to make it text",
        ],
    ),
    (
        "empty strings and blank item keys",
        """\
        workflows:
          - name: w
            steps: [{name: a, task: t, queue: ''}]
            tasks:
              - {name: t, itemListKey: ' ', itemKey: '', steps: [{name: b}]}
        """,
        [
            "wf.yaml:3: workflow 'w', step 'a': queue: must not be empty",
            "wf.yaml:5: workflow 'w', task 't': itemListKey is blank; name a key of the input",
            "wf.yaml:5: workflow 'w', task 't': itemKey: must not be empty",
        ],
    ),
    (
        "top level a list",
        "- name: w\n",
        ["wf.yaml:1: the top level must be a mapping with 'workflows:', got a list"],
    ),
    (
        "top level null",
        "~\n",
        ["wf.yaml:1: the top level must be a mapping with 'workflows:', got null"],
    ),
    (
        "workflows not a list",
        "workflows: {name: w}\n",
        ["wf.yaml:1: workflows: expected a list, got a mapping"],
    ),
    (
        "no workflows",
        "workflows: []\n",
        ["wf.yaml:1: no workflows: add a 'workflows:' list with at least one workflow"],
    ),
    (
        "misspelt top-level key",
        "workflow:\n  - name: w\n",
        [
            "wf.yaml:1: no workflows: add a 'workflows:' list with at least one workflow",
            "wf.yaml:1: unknown field 'workflow' (allowed: workflows, webhooks, limits); did you"
            " mean 'workflows'?",
        ],
    ),
    (
        "duplicate key",
        """\
        workflows:
          - name: w
            steps: [{name: a}]
            steps: [{name: b}]
        """,
        ["wf.yaml:4: workflow 'w': duplicate key 'steps' (first at line 3)"],
    ),
    (
        "empty file",
        "",
        ["wf.yaml: the file is empty; expected a 'workflows:' list"],
    ),
    (
        "comments only",
        "# nothing yet\n",
        ["wf.yaml: the file is empty; expected a 'workflows:' list"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problem_lines(text: str, expected: list[str]) -> None:
    assert problems_of(text) == expected


SYNTAX = [
    ("workflows:\n  - name: w\n   steps: []\n", "wf.yaml:3:4: YAML syntax error: "),
    ("workflows: [\n", "wf.yaml:2:1: YAML syntax error: "),
    ("workflows:\n  - name: 'w\n", "wf.yaml:3:1: YAML syntax error: "),
    ("a: 1\n---\nb: 2\n", "wf.yaml:2:1: YAML syntax error: expected a single document"),
    ("workflows:\n\tname: w\n", "wf.yaml:2:1: YAML syntax error: "),
    ("workflows: \x07\n", "wf.yaml:1: character U+0007 is not allowed in YAML; remove it"),
]


@pytest.mark.parametrize(("text", "start"), SYNTAX)
def test_yaml_syntax_errors_give_line_and_column(text: str, start: str) -> None:
    [problem] = problems_of(text)
    assert problem.startswith(start)


def test_every_problem_is_reported_at_once() -> None:
    text = BOOK.replace("depends: [book-split]", "depend: [book-split]") + (
        "  - name: book-word-counts\n    steps: []\n"
    )
    found = problems_of(text)
    assert [line.split(":")[1] for line in found] == ["6", "8", "10", "11"]
    assert "did you mean 'depends'?" in found[0]
    assert "did you mean 'section-counts'?" in found[1]
    assert "duplicate workflow name 'book-word-counts' (first at line 2)" in found[2]
    assert "'steps' is empty" in found[3]


def test_names_with_odd_characters_stay_on_one_line() -> None:
    [problem] = problems_of('workflows:\n  - name: "a\\nb"\n    steps: [{name: s}]\n')
    assert problem == (
        "wf.yaml:2: workflow 'a\\nb': name: invalid name 'a\\nb':"
        " a name is a letter, then letters, digits, '_' or '-'"
    )
