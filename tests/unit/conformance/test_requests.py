"""The kit's requests are shaped as the manager shapes them (docs/protocol.md, Requests)."""

from __future__ import annotations

import json
import re
import zlib

import pytest

from workflow_manager.conformance.requests import (
    LARGE_INPUT_BYTES,
    PAYLOAD_BYTES,
    PAYLOAD_KEY,
    UNICODE_TEXT,
    build_request,
    encode_input,
    large_input,
    payload_value,
    step_name_for,
    unicode_input,
    with_reference,
)

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"


def test_a_request_carries_the_managers_ids_and_headers():
    request = build_request(JOB, "segment-word-counts", {"a": 1}, attempt=3)

    assert request.correlation_id == f"{JOB}:segment-word-counts"
    assert request.message_id == f"{JOB}:segment-word-counts:3"
    assert request.headers == {"x-workflow": "conformance", "x-attempt": 3}
    assert json.loads(request.body) == {"a": 1} == request.input


def test_extra_headers_are_added_to_the_managers():
    request = build_request(JOB, "s", {}, extra_headers={"x-unknown": "v"})
    assert request.headers == {"x-workflow": "conformance", "x-attempt": 1, "x-unknown": "v"}


@pytest.mark.parametrize(
    ("queue", "step"),
    [
        ("segment-word-counts", "segment-word-counts"),
        ("t1a2b3.echo", "echo"),
        ("staging.segment_word-counts", "segment_word-counts"),
        ("a.b.9lives", "a-b-9lives"),
        ("9lives", "s9lives"),
        ("weird queue!", "weird-queue-"),
    ],
)
def test_step_names_follow_the_managers_pattern(queue, step):
    assert step_name_for(queue) == step
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", step)


def test_non_ascii_text_is_sent_as_utf8_not_as_escapes():
    body = encode_input(unicode_input({"k": 1}))
    assert "Grüße".encode() in body and b"\\u" not in body
    assert json.loads(body)["conformance_text"] == UNICODE_TEXT
    assert json.loads(body)["conformance_ключ"] == "значение ✓"


def test_the_large_input_is_at_least_one_mebibyte_and_keeps_the_base():
    data = large_input({"section": "x"})
    assert data["section"] == "x"
    assert LARGE_INPUT_BYTES <= len(encode_input(data)) < LARGE_INPUT_BYTES + 100


def test_the_payload_value_is_300_kib_of_json_text_over_the_workers_threshold():
    value = payload_value(JOB)
    assert len(json.dumps(value).encode()) == PAYLOAD_BYTES == 300 * 1024 > 256 * 1024
    assert payload_value(JOB) == value != payload_value(f"{JOB}x")  # seeded by the job id
    assert len(set(value[:1000])) > 20  # varied text, not one repeated character
    assert len(zlib.compress(value.encode())) > PAYLOAD_BYTES // 2  # no small message in disguise


def test_the_reference_is_sent_under_its_own_key_beside_the_input():
    reference = {"$ref": "wm://main/j/d", "sha256": "d", "size": 3}
    assert with_reference({"a": 1}, reference) == {"a": 1, PAYLOAD_KEY: reference}
