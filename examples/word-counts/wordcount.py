"""Word counting for the word-counts example: pure functions, no I/O.

Definitions (the workers and the tests share them):

- A *word* is a maximal run of letters (any alphabet), which may contain apostrophes between
  letters: "don't" and "keeper's" are one word each. Text is lowercased and the typographic
  apostrophe (’) is read as ('). Digits, hyphens and other punctuation separate words, so
  "lamp-room" is two words and "1887" is none; an apostrophe at either end of a word is
  dropped ("'tis" -> "tis").
- A *chapter* starts at a line beginning `CHAPTER <roman numeral>.` and runs to the next such
  line. The heading line itself and anything before the first chapter (the title) are not
  counted. A text without chapter headings is one chapter.
- The *title* is the first non-blank line.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

__all__ = [
    "TOP_N",
    "count_book",
    "count_words",
    "merge_counts",
    "split_chapters",
    "summarise",
    "title_of",
    "words",
]

TOP_N = 10
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")
_HEADING = re.compile(r"^CHAPTER [IVXLCDM]+\..*$", re.MULTILINE)


def words(text: str) -> list[str]:
    """The words of `text`, lowercased, in order."""
    normal = unicodedata.normalize("NFC", text).lower().replace("\u2019", "'")
    return _WORD.findall(normal)


def count_words(text: str) -> dict[str, int]:
    """How many times each word occurs in `text`."""
    return dict(Counter(words(text)))


def split_chapters(text: str) -> list[str]:
    """The chapter bodies of `text` (headings and the text before the first heading left out)."""
    headings = list(_HEADING.finditer(text))
    if not headings:
        return [text.strip()]
    ends = [h.start() for h in headings[1:]] + [len(text)]
    return [text[h.end() : end].strip() for h, end in zip(headings, ends, strict=True)]


def title_of(text: str) -> str:
    """The first non-blank line of `text`; ValueError when there is none."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    raise ValueError("the book is empty: no title line found")


def merge_counts(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The sum of several word counts."""
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)
    return dict(total)


def summarise(counts: Mapping[str, int], top: int = TOP_N) -> dict[str, object]:
    """Totals and the `top` most frequent words, ties broken alphabetically."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "total_words": sum(counts.values()),
        "distinct_words": len(counts),
        "top_words": [[word, n] for word, n in ranked[:top]],
    }


def count_book(text: str) -> dict[str, object]:
    """What the book-word-counts workflow computes for `text`, minus the title, in one process."""
    return summarise(merge_counts(count_words(chapter) for chapter in split_chapters(text)))
