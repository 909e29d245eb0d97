"""Fuzzing the running manager: whatever arrives as a trigger or a reply, it keeps serving,
answers each trigger that has a reply_to exactly once, and every job it accepted ends.

How hypothesis meets asyncio here: one manager serves the whole test (starting one per
example would take seconds each). The test starts it, then runs a plain `@given` function in
a worker thread; each example (a batch of triggers, the worker's replies to their steps and
stray replies) is handed to the test's event loop with `run_coroutine_threadsafe`, where the
manager's output reader and our AMQP channel live. So hypothesis draws, reports and replays
examples as usual, `derandomize=True` fixes them, and the checks that need every batch done
(one answer per trigger, the dead letters, the manager's log) run after it returns.
Shrinking is off: each replay is real broker traffic and would blow the time budget; a failing
batch is printed as drawn. The messages, the worker the test plays and the ledger are in
fuzzworkers.py.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from .fuzzworkers import BATCH_TIMEOUT_S, EMPTY, TARGETS, Body, Fuzz, Reply, Trigger, plain

# A step that always ends: a silent worker times out (0.5 s), one retry after 0.05 s.
FUZZ = """
workflows:
  - name: fz
    steps:
      - name: s
        queue: "{p}.s"
        retries: 1
        timeout: 0.5
        retry_backoff: {initial: 0.05, multiplier: 1, max: 0.05}
"""
SETTINGS = settings(
    max_examples=80,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def _nested(depth: int) -> bytes:
    return b'{"a":' + b"[" * depth + b"1" + b"]" * depth + b"}"


SPECIAL_BODIES = [
    Body(b"", None), Body(b" \n\t", None), Body(b"null", False), Body(b"[]", False),
    Body(b'"text"', False), Body(b"-1.5e3", False), Body(b"true", False), Body(b"{broken", False),
    Body(b"NaN", False), Body(b"Infinity", False), Body(b'{"a": NaN}', False),
    Body(b'{"a": -Infinity}', False), Body(b'{"a": 1e999}', False), Body(b"\x00", False),
    Body(b'{"a": ' + b"9" * 4000 + b"}", True), Body(b'{"a": ' + b"9" * 5000 + b"}", None),
    Body(b"[" * 5000 + b"]" * 5000, False), Body(_nested(5000), None), Body(_nested(100), True),
    Body(b'{"s": "' + b"x" * 1_000_000 + b'"}', True), Body(b'{"a": 1, "a": 2}', None),
    Body(b'{"\\u0000": "\\u0000"}', True), Body(b"\xef\xbb\xbf{}", None),
    Body(b"\xff\xfe{\x00}\x00", None), Body(b'{"a": "\xff"}', False),
]  # fmt: skip
# Inputs that once broke the manager (found by this fuzz test), pinned one by one.
SURROGATE = Body(b'{"a": "\\ud800"}', None)
NESTED_300 = Body(_nested(300), None)
BEYOND_INT64 = {"x-attempt": "99999999999999999999"}
ONCE_BROKE = {
    "lone-surrogate-in-trigger": plain(SURROGATE),
    "lone-surrogate-in-reply": plain(EMPTY, SURROGATE),
    "nested-300-in-trigger": plain(NESTED_300),
    "nested-300-in-reply": plain(EMPTY, NESTED_300),
    "x-attempt-beyond-int64": plain(EMPTY, EMPTY, BEYOND_INT64),
}

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
_objects = st.dictionaries(st.text(max_size=5), _json, max_size=4)


def mostly(usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`usual` four times in five: most triggers must start a job for their replies to matter."""
    return st.sampled_from(range(5)).flatmap(lambda n: other if n == 4 else usual)


good_bodies = st.one_of(
    _objects.map(lambda value: Body(json.dumps(value).encode(), True)),
    _objects.map(lambda value: Body(json.dumps(value, ensure_ascii=False).encode(), True)),
)
bodies = mostly(
    good_bodies,
    st.one_of(
        st.sampled_from(SPECIAL_BODIES),
        _json.filter(lambda value: not isinstance(value, dict)).map(
            lambda value: Body(json.dumps(value).encode(), False)
        ),
        st.binary(max_size=40).map(lambda data: Body(data, None)),
    ),
)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# AMQP clients send text headers as str or as bytes (a bytearray, for aio-pika to encode it).
# Floats go out as 32-bit ones; no NaN or infinity: RabbitMQ closes the connection of a client
# that sends one in a header.
_floats = st.floats(allow_nan=False, allow_infinity=False, width=32)
_any_header = st.one_of(
    st.text(max_size=12), INT64, _floats, st.booleans(), st.none(),
    st.binary(max_size=8).map(bytearray), st.lists(INT64, max_size=2),
)  # fmt: skip
workflow_headers = mostly(
    st.sampled_from([("fz", True), (bytearray(b"fz"), True)]),
    st.none()
    | st.sampled_from([("", False), ("FZ", False)])
    | _any_header.map(lambda value: (value, value == "fz")),
)
id_forms = mostly(
    st.sampled_from(["canonical", "canonical", "none", "empty", "upper"]),
    st.sampled_from(["hex", "braces", "urn"]) | st.text(max_size=40).map(lambda text: f"~{text}"),
)
error_headers = st.one_of(st.text(max_size=20), INT64, st.binary(max_size=10).map(bytearray))
# Within int64 as numbers: beyond it, see BEYOND_INT64.
attempt_headers = st.one_of(
    st.integers(min_value=-2, max_value=4), INT64, st.booleans(), st.none(),
    st.floats(min_value=-9e18, max_value=9e18), st.sampled_from([1.0, 2.9, -0.0]),
    st.sampled_from(["1", "2", " 1 ", "1e0"]), st.text(max_size=6),
    st.integers(min_value=4301, max_value=5000).map(lambda digits: "9" * digits),
    st.binary(max_size=4).map(bytearray),
)  # fmt: skip
reply_headers = st.fixed_dictionaries(
    {}, optional={"x-error": error_headers, "x-attempt": attempt_headers}
)
replies = st.builds(
    Reply,
    mostly(st.just("exact"), st.sampled_from(sorted(TARGETS))),
    st.one_of(good_bodies, bodies),
    mostly(reply_headers, st.just({})),
)
_attempts = st.lists(
    mostly(st.lists(replies, min_size=1, max_size=3), st.just([])), min_size=1, max_size=2
)
triggers = st.builds(
    Trigger, workflow_headers, bodies, id_forms, mostly(st.just(True), st.just(False)),
    st.booleans(), _attempts,
)  # fmt: skip
_stray_ids = st.none() | st.text(max_size=30) | st.uuids().map(lambda u: f"{u}:s")
strays = st.builds(
    Reply, _stray_ids | st.sampled_from([":", "a:", ":s", "x:y:z"]), bodies, reply_headers
)
batches = st.tuples(st.lists(triggers, min_size=1, max_size=8), st.lists(strays, max_size=2))
# Every special body once as a trigger and once as a reply, whatever else is drawn.
EVERY_SPECIAL_TRIGGER = [plain(body) for body in SPECIAL_BODIES]
EVERY_SPECIAL_REPLY = [plain(EMPTY, body) for body in SPECIAL_BODIES]


async def test_fuzzed_triggers_and_replies_never_crash_and_every_job_ends(system):
    sys = await system(FUZZ)
    fuzz = Fuzz(sys)
    await fuzz.start()
    loop = asyncio.get_running_loop()
    fates: Counter[str] = Counter()

    @SETTINGS
    @example((EVERY_SPECIAL_TRIGGER, []))
    @example((EVERY_SPECIAL_REPLY, []))
    @given(batches)
    def batch_property(batch: tuple[list[Trigger], list[Reply]]) -> None:
        future = asyncio.run_coroutine_threadsafe(fuzz.run_batch(*batch), loop)
        try:
            fates.update(future.result(timeout=BATCH_TIMEOUT_S + 5))
        except TimeoutError:
            future.cancel()
            raise

    await asyncio.to_thread(batch_property)
    await fuzz.check_the_end()
    # The draws reached every fate (a strategy that only produced rejects would prove little).
    assert {"completed", "failed", "rejected"} <= set(fates), fates


@pytest.mark.parametrize("case", ONCE_BROKE.values(), ids=ONCE_BROKE.keys())
async def test_inputs_that_once_broke_the_manager(system, case: Trigger):
    sys = await system(FUZZ)
    fuzz = Fuzz(sys)
    await fuzz.start()
    try:
        await fuzz.run_batch([case], [], timeout_s=3)
        await fuzz.check_the_end()
    finally:
        await fuzz.restart_after_crash()  # so that the fixture stops a healthy manager
