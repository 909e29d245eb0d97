"""The word-counts example end to end with `segment-word-counts` served by the Go worker."""

from __future__ import annotations

from ..examples.test_word_counts import BOOK, WORKFLOW, check


async def test_word_counts_with_the_go_worker(system, unique, go_worker):
    """The polyglot promise: the same result with the counting done in Go."""
    sys = await system(
        WORKFLOW.replace("{p}.segment-word-counts", "{p}.go-segment-word-counts"),
        worker="examples/word-counts/workers.py:worker",
        worker_env={"QUEUE_PREFIX": f"{unique}."},
    )
    go = await go_worker(f"{unique}.go-segment-word-counts")
    try:
        outcome = await sys.run("book-word-counts", {"path": str(BOOK)})
    finally:
        # The Python worker still declares its own segment-word-counts queue: not in the
        # workflow, so the fixture would not delete it.
        await sys.channel.queue_delete(f"{unique}.segment-word-counts")
    assert outcome.status == "completed", outcome.body
    check(outcome.body)
    # The Python worker has no consumer on the Go queue: the Go worker did every section.
    done = [line for line in go.lines if "step=segment-word-counts" in line and " done in " in line]
    assert done, go.output
