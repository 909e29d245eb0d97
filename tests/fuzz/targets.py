"""Fuzz targets over what reads untrusted input; `one_input` is the fuzzer's entry. Pure.

Each target raises only for a crasher: an exception the function it calls does not document
(`Undeliverable` is an answer; `ReplyError` and `StartTimeError` are the documented refusals
of `decode_json` and `start_time`), or a result that breaks its promise (a value
`decode_json` accepts that the journal's encoder cannot write back the same).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tests.fuzz.pipeline import read_delivery, read_limits, run_pipeline
from tests.fuzz.wire import Reader
from workflow_manager import intake
from workflow_manager.engine import JobSubmitted, SignalReceived, StepReplied, jsontext
from workflow_manager.engine.replies import ReplyError, decode_json
from workflow_manager.starttimes import StartTimeError, start_time

__all__ = ["TARGETS", "one_input"]

_KNOWN = ["6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f:a", "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"]
_NEW_ID = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"


def fuzz_decode_json(reader: Reader) -> None:
    """`decode_json` on raw bytes: a value or ReplyError; a value the journal writes back."""
    body = reader.blob() if reader.byte() & 1 else reader.json_value().encode()
    try:
        value = decode_json(body, "trigger")
    except ReplyError:
        return
    again = jsontext.loads(jsontext.dumps_text(value))
    if again != value:
        raise AssertionError(f"decoded {value!r} but the journal reads back {again!r}")


def fuzz_start_time(reader: Reader) -> None:
    """`start_time` on two header texts: a finite time, None, or StartTimeError."""
    delay = reader.text() if reader.byte() & 1 else None
    not_before = reader.text() if reader.byte() & 1 else None
    now = reader.float64() if reader.byte() & 1 else 1_000_000.0
    if not math.isfinite(now):
        return  # the manager's clock
    try:
        when = start_time(delay, not_before, now, "header 'x-delay'", "header 'x-not-before'")
    except StartTimeError:
        return
    if when is not None and not math.isfinite(when):
        raise AssertionError(f"start_time({delay!r}, {not_before!r}) gave {when}")


def _expect(result: Any, *kinds: type) -> None:
    if isinstance(result, intake.Undeliverable):
        if not isinstance(result.reason, str) or not result.reason:
            raise AssertionError(f"an Undeliverable with no reason: {result!r}")
        return
    if not isinstance(result, kinds):
        raise AssertionError(f"expected {kinds} or Undeliverable, got {result!r}")


def fuzz_intake(reader: Reader) -> None:
    """One of intake's readers on a fuzzed delivery: an event or an Undeliverable, nothing else."""
    which = reader.byte() % 5
    delivery = read_delivery(reader, _KNOWN)
    max_bytes, max_depth = read_limits(reader)
    if which == 0:
        result = intake.trigger_event(delivery, 1.0, _NEW_ID, max_bytes, max_depth=max_depth)
        _expect(result, JobSubmitted)
    elif which == 1:
        _expect(intake.reply_event(delivery, 1.0, max_bytes, max_depth), StepReplied)
    elif which == 2:
        _expect(intake.signal_event(delivery, 1.0, max_bytes, max_depth), SignalReceived)
    elif which == 3:
        text = reader.text() if reader.byte() & 1 else reader.json_value()
        meta = intake.trigger_meta(text, "trigger header 'x-meta'", max_depth)
        _expect(meta, dict, type(None))
    else:
        _expect(intake.trigger_priority(delivery.headers), int)


TARGETS: tuple[Callable[[Reader], object], ...] = (
    fuzz_decode_json,
    fuzz_start_time,
    fuzz_intake,
    run_pipeline,
    run_pipeline,  # the whole way matters most: half the inputs
    run_pipeline,
)


def one_input(data: bytes) -> None:
    """The fuzzer's entry: the first byte picks the target, the rest is its input."""
    reader = Reader(data)
    TARGETS[reader.byte() % len(TARGETS)](reader)
