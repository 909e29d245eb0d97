"""The word-counts example end to end: real manager, real Python (Node.js, exec) workers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "word-counts"
BOOK = EXAMPLE / "book.txt"

# The example's workflow, with this test's queue names.
WORKFLOW = """
workflows:
  - name: book-word-counts
    steps:
      - {name: book-split, queue: "{p}.book-split"}
      - {name: section-counts, task: word-counts, depends: [book-split]}
      - {name: sum-splits, depends: [section-counts], queue: "{p}.sum-splits"}
      - {name: store-title, queue: "{p}.store-title"}
    tasks:
      - name: word-counts
        itemListKey: sections
        steps:
          - {name: segment-word-counts, queue: "{p}.segment-word-counts"}
"""


def expected() -> dict:
    """Count the book directly, without any workflow."""
    spec = importlib.util.spec_from_file_location("wordcount", EXAMPLE / "wordcount.py")
    wordcount = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordcount)
    text = BOOK.read_text(encoding="utf-8")
    return {**wordcount.count_book(text), "title": wordcount.title_of(text)}


def check(result: dict) -> None:
    want = expected()
    for key in ("total_words", "distinct_words", "top_words", "title"):
        assert result[key] == want[key], key


async def start(system, unique):
    return await system(
        WORKFLOW,
        worker="examples/word-counts/workers.py:worker",
        worker_env={"QUEUE_PREFIX": f"{unique}."},
    )


async def test_word_counts_via_the_trigger_queue(system, unique):
    sys = await start(system, unique)
    outcome = await sys.run("book-word-counts", {"path": str(BOOK)})
    assert outcome.status == "completed", outcome.body
    check(outcome.body)


async def test_word_counts_via_http(system, unique):
    sys = await start(system, unique)
    response = await sys.http.post("/api/workflow/book-word-counts", json={"path": str(BOOK)})
    assert response.status_code == 200, response.text
    job_id = response.json()["id"]
    outcome = await sys.outcome_of(job_id, "book-word-counts")
    check(outcome.body)
    job = (await sys.http.get(f"/api/job/{job_id}")).json()
    fan = next(e for e in job["completed"] if e["name"] == "section-counts")
    assert len(fan["tasks"]) == len(expected_sections())


def expected_sections() -> list[str]:
    spec = importlib.util.spec_from_file_location("wordcount", EXAMPLE / "wordcount.py")
    wordcount = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordcount)
    return wordcount.split_chapters(BOOK.read_text(encoding="utf-8"))


async def test_word_counts_with_the_node_worker(system, unique, node_worker):
    """The polyglot promise: segment-word-counts served by the Node.js worker instead."""
    sys = await system(
        WORKFLOW.replace("{p}.segment-word-counts", "{p}.js-segment-word-counts"),
        worker="examples/word-counts/workers.py:worker",
        worker_env={"QUEUE_PREFIX": f"{unique}."},
    )
    js = await node_worker(f"{unique}.js-segment-word-counts")
    try:
        outcome = await sys.run("book-word-counts", {"path": str(BOOK)})
    finally:
        # The Python worker still declares its own segment-word-counts queue: not in the
        # workflow, so the fixture would not delete it.
        await sys.channel.queue_delete(f"{unique}.segment-word-counts")
    assert outcome.status == "completed", outcome.body
    check(outcome.body)
    # The Python worker has no consumer on that queue: the Node.js worker did the counting.
    assert any("listening" in line for line in js.lines)


async def test_word_counts_with_the_exec_worker(system, unique, exec_worker):
    """segment-word-counts served by a shell script through `pyworker exec`."""
    sys = await system(
        WORKFLOW.replace("{p}.segment-word-counts", "{p}.exec-segment-word-counts"),
        worker="examples/word-counts/workers.py:worker",
        worker_env={"QUEUE_PREFIX": f"{unique}."},
    )
    script = await exec_worker(f"{unique}.exec-segment-word-counts", "examples/exec/word-count.sh")
    try:
        outcome = await sys.run("book-word-counts", {"path": str(BOOK)})
    finally:
        await sys.channel.queue_delete(f"{unique}.segment-word-counts")
    assert outcome.status == "completed", outcome.body
    check(outcome.body)
    # Only the exec worker consumes that queue: every chapter was counted by the script.
    done = [line for line in script.lines if "segment-word-counts attempt=1 done" in line]
    assert len(done) == len(expected_sections()), script.output
