"""YAML to plain data with a line for every path, and the YAML problems PyYAML lets through."""

from __future__ import annotations

import pytest

from workflow_manager.config.yamlsource import MAX_NODES, Problem, read_yaml


def test_lines_are_recorded_for_keys_and_items() -> None:
    doc, problems = read_yaml("a: 1\nb:\n  - x\n  -\n    c: 2\n")
    assert problems == [] and doc is not None
    assert doc.data == {"a": 1, "b": ["x", {"c": 2}]}
    assert dict(doc.lines) == {
        (): 1,
        ("a",): 1,
        ("b",): 2,
        ("b", 0): 3,
        ("b", 1): 5,
        ("b", 1, "c"): 5,
    }


@pytest.mark.parametrize(
    ("path", "line"),
    [(("b", 1, "c"), 5), (("b", 1, "missing"), 5), (("b", 7), 2), (("zz", 0), 1), (None, None)],
)
def test_line_of_falls_back_to_the_nearest_ancestor(path: tuple | None, line: int | None) -> None:
    doc, _ = read_yaml("a: 1\nb:\n  - x\n  -\n    c: 2\n")
    assert doc is not None and doc.line_of(path) == line


def test_keys_stay_text_as_written() -> None:
    doc, _ = read_yaml("on: 1\nyes: 2\n3: 4\nnull: 5\n")
    assert doc is not None and doc.data == {"on": 1, "yes": 2, "3": 4, "null": 5}


def test_merge_keys_apply_and_written_keys_win() -> None:
    doc, problems = read_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n")
    assert problems == [] and doc is not None
    assert doc.data["c"] == {"x": 1, "y": 3}
    assert doc.lines[("c", "y")] == 4 and doc.lines[("c", "x")] == 1


def test_unparseable_implicit_scalars_stay_text() -> None:
    doc, problems = read_yaml("a: 2024-13-45\n")
    assert problems == [] and doc is not None and doc.data == {"a": "2024-13-45"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\na: 2\n", Problem(("a",), "duplicate key 'a' (first at line 1)", line=2)),
        (
            "a: &x [*x]\n",
            Problem(("a", 0), "an alias refers to the value that contains it", line=1),
        ),
        ("? [k]\n: 1\n", Problem((), "a mapping key must be a plain string, not a list or map", 1)),
        (
            "a: !!set {x}\n",
            Problem(("a",), "unsupported YAML tag '!!set'; use a plain list or map", 1),
        ),
        ("a: !shell ls\n", Problem(("a",), "unsupported YAML tag '!shell'", line=1)),
        (
            "a: !!python/name:os.system x\n",
            Problem(("a",), "unsupported YAML tag '!!python/name:os.system'", 1),
        ),
        ("a:\n  <<: 5\n", Problem(("a",), "'<<' must name a map or a list of maps", line=2)),
    ],
)
def test_problems_pyyaml_would_let_through(text: str, expected: Problem) -> None:
    doc, problems = read_yaml(text)
    assert doc is not None and problems == [expected]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty; expected a 'workflows:' list"),
        ("   \n# only a comment\n", "the file is empty; expected a 'workflows:' list"),
        ("[" * 1000 + "]" * 1000, "YAML is nested too deeply to read"),
    ],
    ids=["empty", "comment", "deep"],
)
def test_no_document(text: str, message: str) -> None:
    doc, problems = read_yaml(text)
    assert doc is None and [p.message for p in problems] == [message]


def test_alias_bombs_are_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    doc, problems = read_yaml("\n".join(lines))
    assert doc is None
    assert [p.message for p in problems] == [
        f"aliases expand the document to more than {MAX_NODES} values"
    ]
