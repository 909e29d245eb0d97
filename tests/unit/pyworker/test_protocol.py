"""The wire format, pure: request decoding, reply encoding, header parsing."""

from __future__ import annotations

import json

import pytest

from pyworker.errors import InvalidRequest, InvalidResult
from pyworker.protocol import (
    decode_request,
    error_reply,
    parse_attempt,
    result_reply,
    split_correlation_id,
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{}", {}),
        (b'{"a": [1, 2], "b": {"c": null}}', {"a": [1, 2], "b": {"c": None}}),
        ('{"word": "caf\u00e9"}'.encode(), {"word": "caf\u00e9"}),
    ],
)
def test_decode_request_accepts_json_objects(body, expected):
    assert decode_request(body) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "not valid JSON"),
        (b"{oops", "not valid JSON"),
        (b"\xff\xfe\xfa", "not valid JSON"),
        (b"[1]", "must be a JSON object, got list"),
        (b'"text"', "must be a JSON object, got str"),
        (b"null", "must be a JSON object, got NoneType"),
    ],
)
def test_decode_request_rejects_anything_else(body, message):
    with pytest.raises(InvalidRequest, match=message):
        decode_request(body)


@pytest.mark.parametrize(
    ("result", "body"),
    [
        (None, {}),
        ({"a": 1}, {"a": 1}),
        ({"nested": {"list": [1, "x"]}}, {"nested": {"list": [1, "x"]}}),
    ],
)
def test_result_reply_encodes_the_object_and_echoes_the_attempt(result, body):
    reply = result_reply(result, attempt=4)

    assert json.loads(reply.body) == body
    assert reply.headers == {"x-attempt": 4}
    assert not reply.is_error


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([1, 2], "got list"),
        (3, "got int"),
        ("text", "got str"),
        ({"x": {1, 2}}, "not JSON-serialisable"),
        ({"x": float("inf")}, "not JSON-serialisable"),
    ],
)
def test_result_reply_rejects_non_objects(result, message):
    with pytest.raises(InvalidResult, match=message):
        result_reply(result, attempt=1)


def test_error_reply_names_the_exception_in_headers_and_body():
    reply = error_reply(ValueError("bad section"), attempt=2)

    assert reply.is_error
    assert reply.headers == {
        "x-attempt": 2,
        "x-error": "ValueError: bad section",
        "x-error-type": "ValueError",
    }
    assert json.loads(reply.body) == {
        "error": {"type": "ValueError", "message": "ValueError: bad section"}
    }


def test_error_reply_without_a_message_and_with_a_huge_one():
    assert error_reply(KeyError(), attempt=1).headers["x-error"] == "KeyError"
    huge = error_reply(RuntimeError("x" * 10_000), attempt=1).headers["x-error"]
    assert len(huge) == 4000
    assert huge.endswith("...")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (3, 3),
        ("2", 2),
        (b"5", 5),
        (None, None),
        (0, None),
        (-1, None),
        ("x", None),
        (True, None),
    ],
)
def test_parse_attempt(value, expected):
    assert parse_attempt(value) == expected


@pytest.mark.parametrize(
    ("correlation_id", "expected"),
    [
        ("3f2a-uuid:segment-word-counts", ("3f2a-uuid", "segment-word-counts")),
        ("parent:child:0:step", ("parent:child:0", "step")),
        ("no-colon", ("no-colon", None)),
        (":step", (":step", None)),
        ("job:", ("job:", None)),
        ("", ("", None)),
        (None, ("", None)),
    ],
)
def test_split_correlation_id(correlation_id, expected):
    assert split_correlation_id(correlation_id) == expected


def test_a_meta_patch_rides_on_the_result_reply_as_json():
    reply = result_reply({"ok": True}, attempt=1, meta_patch={"tenant": {"plan": "pro"}})
    assert json.loads(reply.headers["x-meta-patch"]) == {"tenant": {"plan": "pro"}}
    assert "x-meta-patch" not in result_reply({}, attempt=1, meta_patch={}).headers
    with pytest.raises(InvalidResult, match="metadata patch is not JSON-serialisable"):
        result_reply({}, attempt=1, meta_patch={"x": object()})
