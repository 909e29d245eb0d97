"""examples/exec/word-count.sh counts as examples/word-counts/wordcount.py does (no broker)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "exec" / "word-count.sh"
EXAMPLE = ROOT / "examples" / "word-counts"

# Where tokenisers differ, within what the script supports (lowercase letters outside ASCII):
# apostrophes (typographic too, doubled, at the ends), digits, '_', '-', escapes, punctuation
# from Latin-1 and General Punctuation, Latin-1 numerals and letters, other scripts.
TEXT = (
    "It was the best of times, it was the WORST of times; Don't stop -- DON\u2019T 'tis "
    "o'clock'' a''b c'''d rock'n'roll lamp-room 1887 42x under_score \"quoted\" back\\slash "
    "tab\there new\nline caf\u00e9 na\u00efve \u00abguillemets\u00bb x\u00b2 \u00bd \u00aa "
    "\u00b5 3\u00d74 a\u00f7b dash\u2014dash ellipsis\u2026end \u201cquotes\u201d "
    "\u6771\u4eac \u03bf\u03b4\u03bf\u03c2 \u00a7 \u00a9 nbsp\u00a0here"
)


def _wordcount() -> ModuleType:
    spec = importlib.util.spec_from_file_location("exec_wordcount", EXAMPLE / "wordcount.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(step_input: object, *, ensure_ascii: bool = False) -> subprocess.CompletedProcess[str]:
    body = json.dumps(step_input, ensure_ascii=ensure_ascii)
    return subprocess.run(
        [str(SCRIPT)], input=body, capture_output=True, text=True, timeout=30, check=False
    )


def _counts(text: str, *, ensure_ascii: bool = False) -> dict[str, int]:
    # Other keys, nested and with brackets in strings, must not confuse the script's parser.
    step_input = {"book": {"t": ["}", 1]}, "section": text, "n": -1.5e3}
    result = _run(step_input, ensure_ascii=ensure_ascii)
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert list(output) == ["section"]
    return output["section"]


@pytest.mark.parametrize("ensure_ascii", [False, True], ids=["utf8", "escaped"])
def test_the_script_counts_like_the_python_worker(ensure_ascii: bool) -> None:
    wordcount = _wordcount()
    book = (EXAMPLE / "book.txt").read_text(encoding="utf-8")
    for text in [TEXT, book, *wordcount.split_chapters(book)]:
        assert _counts(text, ensure_ascii=ensure_ascii) == wordcount.count_words(text)


def test_letters_outside_ascii_are_not_lowercased_the_documented_difference() -> None:
    assert _counts("\u00c9t\u00e9") == {"\u00c9t\u00e9": 1}
    assert _wordcount().count_words("\u00c9t\u00e9") == {"\u00e9t\u00e9": 1}


@pytest.mark.parametrize(
    ("step_input", "message"),
    [
        ({"text": "no section"}, 'the input has no "section" (the text to count)'),
        ({"section": 7}, '"section" must be a string of text'),
        ([1, 2], "the input must be a JSON object"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(step_input: object, message: str) -> None:
    result = _run(step_input)

    assert result.returncode == 1
    assert result.stderr.strip() == f"word-count.sh: {message}"
    assert result.stdout == ""
