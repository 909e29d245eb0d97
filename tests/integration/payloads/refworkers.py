"""The Python steps of the reference tests (`QUEUE_PREFIX` names the test's queues; `REF_STEPS`,
comma-separated, which of them this process serves, default both): `produce` returns a large
value, which pyworker stores; `check` gets it resolved."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from pyworker import Worker

worker = Worker()
SIZE = 3_000_000  # over the 256 KiB threshold: stored by pyworker, sent as a reference
SERVED = os.environ.get("REF_STEPS", "produce,check").split(",")


def produce(data: dict[str, Any]) -> dict[str, Any]:
    """A large text (seeded by the payload, so each job's differs) and a small count."""
    seed = str(data["seed"]).encode()
    text = hashlib.sha256(seed).hexdigest() * (SIZE // 64)
    return {"blob": text, "n": len(text)}


def check(data: dict[str, Any]) -> dict[str, Any]:
    """What reached the last step, in counts: the value resolved, not a reference."""
    blob = data["blob"]
    return {"checked": isinstance(blob, str) and len(blob) == data["n"], "length": len(blob)}


for name, handler in (("produce", produce), ("check", check)):
    if name in SERVED:
        worker.step(name)(handler)
