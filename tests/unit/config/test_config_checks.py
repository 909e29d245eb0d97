"""The pure structural checks: cycle finding, suggestions, quoting, problems on raw data."""

from __future__ import annotations

import pytest

from workflow_manager.config.checks import check_document, find_cycles, quote, suggest
from workflow_manager.config.yamlsource import Problem

CYCLES = [
    ("no edges", {"a": [], "b": []}, []),
    ("a chain", {"a": ["b"], "b": ["c"], "c": []}, []),
    ("self loop", {"a": ["a"]}, [("a", "a")]),
    ("triangle", {"a": ["b"], "b": ["c"], "c": ["a"]}, [("a", "b", "c", "a")]),
    ("rotated to the first declared", {"b": ["c"], "a": ["b"], "c": ["a"]}, [("b", "c", "a", "b")]),
    (
        "two loops share a node",
        {"a": ["b", "c"], "b": ["a"], "c": ["a"]},
        [("a", "b", "a"), ("a", "c", "a")],
    ),
    (
        "two separate loops",
        {"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c"]},
        [("a", "b", "a"), ("c", "d", "c")],
    ),
    ("edges to unknown nodes ignored", {"a": ["zz"], "b": []}, []),
    ("diamond is no cycle", {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}, []),
]


@pytest.mark.parametrize(("graph", "expected"), [c[1:] for c in CYCLES], ids=[c[0] for c in CYCLES])
def test_find_cycles(graph: dict[str, list[str]], expected: list[tuple[str, ...]]) -> None:
    assert find_cycles(graph) == expected


def test_find_cycles_survives_long_chains() -> None:
    names = [f"s{i}" for i in range(5000)]
    graph = {name: [nxt] for name, nxt in zip(names, names[1:] + names[:1], strict=True)}
    [cycle] = find_cycles(graph)
    assert cycle[0] == cycle[-1] == "s0" and len(cycle) == 5001


@pytest.mark.parametrize(
    ("word", "choices", "expected"),
    [
        ("depend", ["name", "depends", "queue", "task"], "; did you mean 'depends'?"),
        ("itemlistkey", ["itemListKey", "itemKey"], "; did you mean 'itemListKey'?"),
        ("DEPENDS", ["name", "depends"], "; did you mean 'depends'?"),
        (
            "item_list_key",
            ["name", "steps", "itemListKey", "itemKey"],
            "; did you mean 'itemListKey'?",
        ),
        ("zzz", ["name", "depends"], ""),
        ("a", [], ""),
    ],
)
def test_suggest(word: str, choices: list[str], expected: str) -> None:
    assert suggest(word, choices) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "'abc'"),
        ("it's", '"it\'s"'),
        ("a\nb", "'a\\nb'"),
        ("x" * 70, "'" + "x" * 57 + "...'"),
    ],
)
def test_quote(value: str, expected: str) -> None:
    assert quote(value) == expected


def test_checks_skip_malformed_parts_and_keep_going() -> None:
    data = {
        "workflows": [
            "not a mapping",
            {
                "name": "w",
                "steps": [{"name": "a", "depends": "a"}, 7, {"name": "b", "depends": ["zz"]}],
            },
            {"name": 5, "steps": None, "tasks": "nope"},
        ]
    }
    assert check_document(data, {}) == [
        Problem(
            ("workflows", 1, "steps", 2, "depends", 0),
            "depends on unknown step 'zz' (known: a)",
        )
    ]


@pytest.mark.parametrize("data", [None, [], "text", {"workflows": None}, {"workflows": "x"}])
def test_checks_leave_wrong_shapes_to_validation(data: object) -> None:
    assert check_document(data, {}) == []


def test_task_steps_resolve_tasks_of_the_same_workflow() -> None:
    data = {
        "workflows": [
            {
                "name": "v",
                "steps": [{"name": "a", "task": "t"}],
                "tasks": [{"name": "t", "steps": []}],
            },
            {"name": "w", "steps": [{"name": "a", "task": "t"}]},
        ]
    }
    [problem] = check_document(data, {})
    assert problem.path == ("workflows", 1, "steps", 0, "task")
    assert "unknown task 't'" in problem.message
