"""The fuzzer's starting inputs: well-formed messages for each target, written with `Writer`.

Starting from messages the manager accepts, the fuzzer's mutations reach past the first
checks at once: a job that runs, a fan-out, a waiting step, metadata and its patches.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from tests.fuzz.pipeline import JOB_IDS
from tests.fuzz.wire import Writer, json_text

__all__ = ["seeds", "write_seeds"]

# Target numbers in `targets.TARGETS`.
_DECODE, _START, _INTAKE, _PIPELINE = 0, 1, 2, 3
# Message kinds in `pipeline._KINDS`.
_TRIGGER, _REPLY, _SIGNAL, _TIMER = 0, 1, 2, 3
_JOB = JOB_IDS[0]
_NEW_ID = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"  # pipeline's id for a trigger naming none


def _child(parent: str, step: str, index: int) -> str:
    """The id the engine gives a fan-out child whose item names no id."""
    return str(uuid.uuid5(uuid.UUID(parent), f"{step}/{index}"))


def _delivery(
    w: Writer,
    correlation_id: str | None,
    headers: list[tuple[str, str | int]],
    body: Any,
    reply_to: bool = False,
) -> Writer:
    """A delivery as `pipeline.read_delivery` reads it; `body` as JSON (bytes as they are)."""
    if correlation_id is None:
        w.byte(0)
    else:
        w.byte(3).text(correlation_id)
    w.byte(2 if reply_to else 1)  # "answers" or ""
    w.byte(len(headers))
    for name, value in headers:
        if isinstance(value, int):
            w.header_int(name, value)
        else:
            w.header_text(name, value)
    raw = body if isinstance(body, bytes) else json_text(body).encode()
    return w.byte(1).blob(raw)


def _message(w: Writer, kind: int, correlation_id: str | None, headers: Any, body: Any) -> None:
    w.byte(1).byte(kind).byte(0)  # a second later; the kind; the 16 MiB size limit
    _delivery(w, correlation_id, headers, body, reply_to=kind == _TRIGGER)


def _pipeline_fan() -> bytes:
    """A fan-out job with metadata: split, two children, a patch, a signal."""
    w = Writer().byte(_PIPELINE).byte(4)
    meta = json_text({"tenant": "north"})
    trigger = [("workflow", "fan"), ("x-meta", meta), ("x-priority", 5)]
    _message(w, _TRIGGER, _JOB, trigger, {"order": 7, "items": [1, 2]})
    w.byte(0).byte(_TIMER).byte(0).byte(0)  # admitted (a workflow with a concurrency limit)
    patch = [("x-meta-patch", json_text({"seen": {"split": True}})), ("x-attempt", 1)]
    _message(w, _REPLY, f"{_JOB}:split", patch, {"items": [1, {"id": _NEW_ID, "n": 2}]})
    _message(w, _REPLY, f"{_child(_JOB, 'each', 0)}:work", [("x-attempt", 1)], {"done": 1})
    _message(w, _SIGNAL, f"{_child(_JOB, 'each', 0)}:check", [], {"ok": True})
    return w.data()


def _pipeline_plain() -> bytes:
    """A plain job with no id of its own: its first step fails once, then runs."""
    w = Writer().byte(_PIPELINE).byte(3)
    _message(w, _TRIGGER, None, [("workflow", "plain")], b"")
    _message(w, _REPLY, f"{_NEW_ID}:a", [("x-error", "try later")], b"")
    w.byte(1).byte(_TIMER).byte(0).byte(0)  # the retry's timer (the first one)
    _message(w, _REPLY, f"{_NEW_ID}:a", [("x-attempt", 2)], {"items": [1, 2]})
    return w.data()


def _pipeline_delayed() -> bytes:
    """A job that starts later, and one refused for its payload."""
    w = Writer().byte(_PIPELINE).byte(1)
    headers = [("workflow", "fan"), ("x-not-before", "2026-05-01T09:00:00Z")]
    _message(w, _TRIGGER, JOB_IDS[1], headers, {"order": "x", "items": []})
    _message(w, _TRIGGER, _JOB, [("workflow", "fan")], {"order": [1]})
    return w.data()


def _intake() -> list[bytes]:
    trigger = [("workflow", "plain"), ("x-meta", '{"a": {"b": [1]}}'), ("traceparent", "00-x")]
    return [
        _delivery(Writer().byte(_INTAKE).byte(0), _JOB, trigger, {"p": 1}, True).byte(0).data(),
        _delivery(Writer().byte(_INTAKE).byte(1), f"{_JOB}:a", [("x-error", "no")], b"").data(),
        _delivery(Writer().byte(_INTAKE).byte(2), f"{_JOB}:a", [], {"ok": 1}).data(),
        _delivery(Writer().byte(_INTAKE).byte(3), None, [], b"").byte(0).byte(0).json({}).data(),
        _delivery(Writer().byte(_INTAKE).byte(4), None, [("x-priority", "9")], b"").data(),
    ]


def seeds() -> dict[str, bytes]:
    """Every seed input by a file name."""
    bodies = [b'{"a": [1, 2.5, "x", null, true]}', b"\xef\xbb\xbf{}", b"[" * 64 + b"]" * 64]
    found = {
        f"decode-{i}": Writer().byte(_DECODE).byte(1).blob(body).data()
        for i, body in enumerate(bodies)
    }
    found["decode-long-int"] = Writer().byte(_DECODE).byte(1).blob(b"1" + b"0" * 30).data()
    found["start-delay"] = Writer().byte(_START).byte(1).text("10").byte(0).byte(0).data()
    found["start-time"] = (
        Writer().byte(_START).byte(0).byte(1).text("2026-05-01T09:00:00+02:00").byte(0).data()
    )
    found.update({f"intake-{i}": data for i, data in enumerate(_intake())})
    found["pipeline-fan"] = _pipeline_fan()
    found["pipeline-plain"] = _pipeline_plain()
    found["pipeline-delayed"] = _pipeline_delayed()
    return found


def write_seeds(folder: Path) -> None:
    """Write every seed input into `folder` (the fuzzer's corpus to start from)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in seeds().items():
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    write_seeds(Path(sys.argv[1]))
