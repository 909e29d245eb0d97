"""Python workers for the `book-word-counts` workflow (see README.md).

Run them with `pyworker examples/word-counts/workers.py:worker`. The queues are named after the
steps; with `$QUEUE_PREFIX` (or `--queue-prefix`) set, pyworker prefixes them, so several copies
can share one broker. The counting itself lives in `wordcount.py`, so it can be tested (and
compared with a job's result) without a broker.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import wordcount
from pydantic import BaseModel, model_validator

from pyworker import StepContext, Worker

log = logging.getLogger(__name__)

worker = Worker(name="word-counts example")


class Book(BaseModel):
    """The job payload: the book's `text`, or a `path` to read it from (UTF-8)."""

    path: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Book:
        if (self.path is None) == (self.text is None):
            raise ValueError('give exactly one of "path" or "text"')
        return self

    def read(self) -> str:
        """The book's text; a relative path is resolved against the worker's directory."""
        if self.text is not None:
            return self.text
        path = Path(str(self.path))
        if not path.is_file():
            raise FileNotFoundError(
                f"book file {str(path)!r} not found (relative paths are resolved against "
                f"the worker's directory, {os.getcwd()})"
            )
        return path.read_text(encoding="utf-8")


class Section(BaseModel):
    """One fan-out child's input: a chapter's text."""

    section: str


class SectionCounts(BaseModel):
    """The gathered children's outputs: one word count per chapter."""

    sections: list[dict[str, int]]


@worker.step("book-split")
def book_split(book: Book) -> dict[str, list[str]]:
    """Split the book into chapters; `section-counts` fans out over them."""
    return {"sections": wordcount.split_chapters(book.read())}


@worker.step("segment-word-counts")
def segment_word_counts(data: Section) -> dict[str, dict[str, int]]:
    """Count the words of one chapter."""
    return {"section": wordcount.count_words(data.section)}


@worker.step("sum-splits")
def sum_splits(data: SectionCounts) -> dict[str, object]:
    """Add the chapters' counts up: totals and the ten most frequent words."""
    return wordcount.summarise(wordcount.merge_counts(data.sections))


@worker.step("store-title")
def store_title(book: Book, ctx: StepContext) -> dict[str, str]:
    """The book's title (its first non-blank line)."""
    title = wordcount.title_of(book.read())
    log.info("%s workflow=%s title %r", ctx.log_fields, ctx.workflow, title)
    return {"title": title}
