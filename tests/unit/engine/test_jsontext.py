"""JSON text: orjson's speed, with the stdlib's answer wherever the two would differ."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from workflow_manager.engine import jsontext


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, -0.0, 1e16, True, None, "é😀"]},
        {"big": 2**70, "neg": -(2**64)},  # beyond 64 bits: orjson refuses, the stdlib writes it
        {1: "one"},  # a non-string key: written as "1", as json.dumps does
    ],
)
def test_dumps_writes_what_the_stdlib_would_read_back(value):
    text = jsontext.dumps(value)
    assert json.loads(text) == json.loads(json.dumps(value))
    assert jsontext.dumps_text(value) == text.decode()
    assert b" " not in text  # compact


def test_dumps_refuses_what_is_not_json():
    with pytest.raises(TypeError):
        jsontext.dumps({"a": object()})
    with pytest.raises(ValueError):  # a lone surrogate cannot be UTF-8
        jsontext.dumps({"a": "\ud800"})


def test_big_integers_are_read_exactly_not_as_floats():
    assert jsontext.loads(b'{"id": 123456789012345678901234567890}') == {
        "id": 123456789012345678901234567890
    }
    assert jsontext.fast_loads(b'{"id": 123456789012345678901234567890}') is jsontext.UNDECIDED


def test_fast_loads_leaves_what_it_refuses_to_the_stdlib():
    assert jsontext.fast_loads(b'{"a": [1, "x"]}') == {"a": [1, "x"]}
    for text in (b"NaN", b'"\\ud800"', b"\xef\xbb\xbf{}", b"{", b"1e999"):
        assert jsontext.fast_loads(text) is jsontext.UNDECIDED
    with pytest.raises(ValueError):
        jsontext.loads("{")


def test_a_kept_body_costs_its_own_size_not_a_working_buffer():
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [jsontext.dumps({"item": i}) for i in range(2000)]
        per_body = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_body < 200, per_body  # orjson's own bytes object would hold 4 KB each
