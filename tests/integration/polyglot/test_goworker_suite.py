"""The Go worker's own tests (go test, against the real RabbitMQ), run by the Python suite."""

from __future__ import annotations

from .conftest import GO_EXAMPLE_DIR, GOWORKER_DIR, run_go


def test_goworker_go_test(go: str, amqp_url: str) -> None:
    """goworker: confirm-gated acks, error replies, StepInfo, reconnect, drain (see *_test.go)."""
    output = run_go(go, GOWORKER_DIR, "test", "-count=1", "./...", env={"AMQP_URL": amqp_url})
    assert "ok  \tworkflow-manager/goworker" in output, output


def test_go_word_counts_example_go_test(go: str) -> None:
    """The Go word counter gives the Python worker's counts (cases computed with wordcount.py)."""
    output = run_go(go, GO_EXAMPLE_DIR, "test", "-count=1", "./...")
    assert "ok  \tworkflow-manager/examples/word-counts/go" in output, output


def test_go_vet_is_clean(go: str) -> None:
    """go vet finds nothing in the library, its echo example and the word-counts worker."""
    run_go(go, GOWORKER_DIR, "vet", "./...")
    run_go(go, GO_EXAMPLE_DIR, "vet", "./...")
