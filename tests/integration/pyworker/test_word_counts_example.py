"""The word-counts example's handlers over the real broker, with this test playing the engine."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from pyworker import Worker
from pyworker.loader import load_module

EXAMPLE_DIR = Path(__file__).resolve().parents[3] / "examples" / "word-counts"
BOOK = EXAMPLE_DIR / "book.txt"


@pytest.fixture
def example() -> Iterator[ModuleType]:
    """examples/word-counts/workers.py, imported the way the CLI does; undone afterwards."""
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    try:
        yield load_module(str(EXAMPLE_DIR / "workers.py"))
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if name in ("workers", "wordcount"):
                del sys.modules[name]


@pytest.fixture
async def renamed(example, make_worker, caller) -> Worker:
    """A worker serving the example's handlers on this test's own queue names."""
    worker = make_worker()
    for queue, handler in example.worker.handlers.items():
        worker.step(caller.queue(queue))(handler.func)
    await worker.start()
    return worker


async def _call(caller, step: str, body: dict) -> dict:
    await caller.request(caller.queue(step), body, step=step)
    reply = await caller.reply()
    assert "x-error" not in reply.headers, reply.headers
    return reply.body


async def test_the_workflow_result_matches_counting_the_file_directly(example, renamed, caller):
    payload = {"path": str(BOOK)}

    split = await _call(caller, "book-split", payload)
    # The engine's fan-out: one child per section, each given {"section": element}.
    for section in split["sections"]:
        await caller.request(caller.queue("segment-word-counts"), {"section": section})
    children = {}
    for _ in split["sections"]:
        reply = await caller.reply()
        children[reply.correlation_id] = reply.body
    counts = [child["section"] for child in children.values()]
    summed = await _call(caller, "sum-splits", {"sections": counts})
    title = await _call(caller, "store-title", payload)

    text = BOOK.read_text(encoding="utf-8")
    assert len(split["sections"]) == 6
    assert {**summed, **title} == {
        **example.wordcount.count_book(text),
        "title": "THE LAMPLIGHTER OF HOLLOW QUAY",
    }


@pytest.mark.parametrize(
    ("payload", "error_type", "message"),
    [
        ({}, "ValidationError", 'give exactly one of "path" or "text"'),
        ({"path": "x.txt", "text": "y"}, "ValidationError", 'give exactly one of "path" or "text"'),
        (
            {"path": "no/such/book.txt"},
            "FileNotFoundError",
            "book file 'no/such/book.txt' not found",
        ),
    ],
)
async def test_a_bad_book_payload_is_an_x_error(renamed, caller, payload, error_type, message):
    await caller.request(caller.queue("book-split"), payload)
    reply = await caller.reply()

    assert reply.headers["x-error-type"] == error_type
    assert message in reply.headers["x-error"]


async def test_book_split_accepts_text_and_store_title_reads_it(renamed, caller):
    text = "A Title\n\nCHAPTER I.\none two\nCHAPTER II.\nthree\n"

    assert await _call(caller, "book-split", {"text": text}) == {"sections": ["one two", "three"]}
    assert await _call(caller, "store-title", {"text": text}) == {"title": "A Title"}
