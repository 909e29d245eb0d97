"""The word-counts example's pure counting module (examples/word-counts/wordcount.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE_DIR = Path(__file__).resolve().parents[3] / "examples" / "word-counts"
BOOK = EXAMPLE_DIR / "book.txt"


@pytest.fixture(scope="module")
def wc() -> ModuleType:
    """wordcount.py, loaded by path (it is an example, not an installed package)."""
    spec = importlib.util.spec_from_file_location(
        "word_counts_example", EXAMPLE_DIR / "wordcount.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The cat, the HAT.", ["the", "cat", "the", "hat"]),
        ("Don't stop; the keeper's lamp", ["don't", "stop", "the", "keeper's", "lamp"]),
        ("Nell\u2019s ledger", ["nell's", "ledger"]),
        ("'tis the dogs' day", ["tis", "the", "dogs", "day"]),
        (
            "lamp-room in 1887, x2 and under_score",
            ["lamp", "room", "in", "x", "and", "under", "score"],
        ),
        ("rock''n roll", ["rock", "n", "roll"]),
        ("Caf\u00e9 CAFE\u0301 na\u00efve", ["caf\u00e9", "caf\u00e9", "na\u00efve"]),
        ("", []),
        ("123 -- !!", []),
    ],
)
def test_words(wc, text, expected):
    assert wc.words(text) == expected


def test_count_words(wc):
    assert wc.count_words("a b A c b a") == {"a": 3, "b": 2, "c": 1}


def test_split_chapters_drops_the_title_and_the_headings(wc):
    text = (
        "My Title\n\nCHAPTER I. BEGINNING\none two\n\nCHAPTER II.\nthree\nCHAPTER IX. END\nfour\n"
    )

    assert wc.split_chapters(text) == ["one two", "three", "four"]


def test_a_text_without_headings_is_one_chapter(wc):
    assert wc.split_chapters("  just some text\n") == ["just some text"]


def test_a_heading_must_start_a_line(wc):
    assert wc.split_chapters("see CHAPTER I. for details") == ["see CHAPTER I. for details"]


def test_title_is_the_first_non_blank_line(wc):
    assert wc.title_of("\n\n  The Title  \nCHAPTER I.\n") == "The Title"
    with pytest.raises(ValueError, match="no title line"):
        wc.title_of(" \n\n")


def test_merge_counts(wc):
    assert wc.merge_counts([{"a": 1, "b": 2}, {"b": 3}, {}]) == {"a": 1, "b": 5}


def test_summarise_ranks_by_count_then_alphabetically(wc):
    counts = {"pear": 2, "apple": 2, "fig": 5, "kiwi": 1, "date": 2}

    assert wc.summarise(counts, top=4) == {
        "total_words": 12,
        "distinct_words": 5,
        "top_words": [["fig", 5], ["apple", 2], ["date", 2], ["pear", 2]],
    }


def test_summarise_keeps_ten_by_default(wc):
    counts = {f"w{i:02d}": 1 for i in range(15)}

    assert [w for w, _ in wc.summarise(counts)["top_words"]] == [f"w{i:02d}" for i in range(10)]


def test_the_sample_book(wc):
    text = BOOK.read_text(encoding="utf-8")
    chapters = wc.split_chapters(text)

    assert wc.title_of(text) == "THE LAMPLIGHTER OF HOLLOW QUAY"
    assert len(chapters) == 6
    assert all(len(wc.words(chapter)) > 400 for chapter in chapters)
    # The figures quoted in examples/word-counts/README.md.
    summary = wc.count_book(text)
    assert (summary["total_words"], summary["distinct_words"]) == (3250, 663)
    assert summary["top_words"][:3] == [["the", 329], ["and", 145], ["a", 85]]


def test_count_book_counts_every_chapter_word_once(wc):
    text = BOOK.read_text(encoding="utf-8")
    headings_and_title = [
        line
        for line in text.splitlines()
        if line.startswith("CHAPTER ") or line == wc.title_of(text)
    ]
    not_counted = sum(len(wc.words(line)) for line in headings_and_title)

    assert wc.count_book(text)["total_words"] == len(wc.words(text)) - not_counted
