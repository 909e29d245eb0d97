"""The hand-packed publish frames are pamqp's, byte for byte."""

from __future__ import annotations

from typing import Any

import pamqp.frame
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pamqp.body import ContentBody
from pamqp.commands import Basic
from pamqp.header import ContentHeader

from workflow_manager.transport.wire import publish_frames

FRAME_MAX_BODY = 131_072 - 8


def _pamqp(channel: int, body: bytes, frame_max_body: int, **fields: Any) -> bytes:
    """What aiormq's basic_publish sends for the same publish."""
    exchange, routing_key = fields.pop("exchange"), fields.pop("routing_key")
    mandatory = fields.pop("mandatory")
    frames: list[Any] = [
        Basic.Publish(exchange=exchange, routing_key=routing_key, mandatory=mandatory),
        ContentHeader(properties=Basic.Properties(**fields), body_size=len(body)),
    ]
    frames += [
        ContentBody(body[start : start + frame_max_body])
        for start in range(0, len(body), frame_max_body)
    ]
    return b"".join(pamqp.frame.marshal(frame, channel) for frame in frames)


def _both(channel: int, body: bytes, frame_max_body: int = FRAME_MAX_BODY, **fields: Any) -> None:
    ours = publish_frames(channel, body, frame_max_body=frame_max_body, **fields)
    assert ours == _pamqp(channel, body, frame_max_body, **fields)


def test_a_step_request_is_framed_as_pamqp_frames_it():
    _both(
        1, b'{"text": "a b c"}',
        exchange="", routing_key="wc.split", mandatory=True, content_type="application/json",
        headers={"x-attempt": 2, "x-job-id": "j1", "x-meta": {"tenant": "a", "n": [1, 2]}},
        delivery_mode=2, priority=5, correlation_id="j1:split", reply_to="wm.replies",
        message_id="m-1",
    )  # fmt: skip


def test_an_event_without_properties_and_an_empty_body():
    _both(3, b"", exchange="wm.events", routing_key="wf.job.started", mandatory=False)


def test_a_body_larger_than_a_frame_is_split_as_pamqp_splits_it():
    _both(2, b"x" * 1000, frame_max_body=100, exchange="", routing_key="q", mandatory=True)
    _both(2, b"x" * 1001, frame_max_body=100, exchange="", routing_key="q", mandatory=True)


def test_a_step_requests_headers_of_strings_and_small_ints_are_pamqps_table():
    headers = {"x-workflow": "wordcount", "x-attempt": 1, "traceparent": "00-ab-cd-01", "é": "ü"}
    _both(3, b"{}", exchange="", routing_key="q", mandatory=True, headers=headers)
    _both(3, b"{}", exchange="", routing_key="q", mandatory=True, headers={"x-attempt": 300})


def test_a_name_longer_than_a_short_string_is_refused():
    with pytest.raises(ValueError, match="255 bytes"):
        publish_frames(1, b"", exchange="", routing_key="q" * 256, mandatory=True,
                       frame_max_body=FRAME_MAX_BODY)  # fmt: skip


_text = st.text(max_size=40)
_header = st.one_of(
    st.integers(-(2**31), 2**31 - 1), st.integers(-130, 130), _text, st.booleans(), st.none(),
    st.floats(width=32, allow_nan=False),  # pamqp sends a float as 32 bits
)
# Names past 128 bytes, which pamqp cuts, among the usual ones.
_name = st.text(min_size=1, max_size=10) | st.text(min_size=120, max_size=140)


@given(
    channel=st.integers(1, 2047),
    body=st.binary(max_size=300),
    exchange=st.from_regex(r"[a-zA-Z0-9_.:-]{0,40}", fullmatch=True),  # pamqp's rule for names
    routing_key=_text,
    mandatory=st.booleans(),
    headers=st.none() | st.dictionaries(_name, _header, max_size=4),
    priority=st.none() | st.integers(0, 9),
    correlation_id=st.none() | _text,
    reply_to=st.none() | _text,
    message_id=st.none() | _text,
)
def test_any_publish_is_framed_as_pamqp_frames_it(channel, body, headers, **fields):
    _both(
        channel, body, frame_max_body=64, content_type="application/json",
        delivery_mode=2, headers=headers, **fields,
    )  # fmt: skip
