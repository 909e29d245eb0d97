"""The Python steps of the polyglot reference test (`QUEUE_PREFIX` names this test's queues):
`produce` returns a large value, which pyworker stores; `check` gets it resolved."""

from __future__ import annotations

import hashlib
from typing import Any

from pyworker import Worker

worker = Worker()
SIZE = 3_000_000  # over the 256 KiB threshold: stored by pyworker, sent as a reference


@worker.step("produce")
def produce(data: dict[str, Any]) -> dict[str, Any]:
    """A large text (seeded by the payload, so each job's differs) and a small count."""
    seed = str(data["seed"]).encode()
    text = hashlib.sha256(seed).hexdigest() * (SIZE // 64)
    return {"blob": text, "n": len(text)}


@worker.step("check")
def check(data: dict[str, Any]) -> dict[str, Any]:
    """What reached the last step, in counts: the value resolved, not a reference."""
    blob = data["blob"]
    return {"checked": isinstance(blob, str) and len(blob) == data["n"], "length": len(blob)}
