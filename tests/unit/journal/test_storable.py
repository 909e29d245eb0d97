"""One rule for NUL and lone surrogates in both journals (workflow_manager/journal/storable.py):
U+FFFD
in a plain text column, an escape in JSON text; pure tables, then the codec's parameters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.journal.helpers import T0, job
from workflow_manager.journal.codec import (
    decode_event,
    decode_job,
    encode_event,
    encode_job,
    encode_sent,
)
from workflow_manager.journal.postgres.placed import job_values
from workflow_manager.journal.records import EventRow
from workflow_manager.journal.storable import storable_json, storable_params, storable_text

BAD = "\x00\ud800.\udfff"  # NUL, a lone high and a lone low surrogate
SAFE = "\ufffd\ufffd.\ufffd"


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("job-1", "job-1"),
        ("a\x00b", "a\ufffdb"),
        ("\ud800x", "\ufffdx"),
        ("é\x00\udfff", "é\ufffd\ufffd"),
        ("😀 fine", "😀 fine"),
        ("", ""),
    ],
)
def test_a_plain_text_keeps_every_character_but_nul_and_surrogates(text: str, stored: str):
    assert storable_text(text) == stored
    stored.encode("utf-8")  # what both drivers do with it


@pytest.mark.parametrize(
    "value",
    [
        {"k\x00": "v\x00"},
        {"lone": "\ud800", "low": "x\udfffy", "both": BAD},
        {"not a surrogate": "\\ud800", "escaped backslash": "\\\x00"},
        {"nested": [{"é": ["\ud83d", 1, None, "😀"]}]},
        ["\x00"],
    ],
)
def test_a_json_text_is_ascii_where_it_must_be_and_reads_back_the_same(value: Any):
    text = storable_json(value)
    assert "\x00" not in text
    text.encode("utf-8")
    assert json.loads(text) == value


def test_two_surrogates_side_by_side_read_back_as_the_character_they_pair_to():
    # As in any JSON text: "\ud83d\ude00" is one character, whatever the str held.
    assert json.loads(storable_json(["\ud83d\ude00"])) == ["😀"]


def _texts(values: tuple[Any, ...]) -> list[str]:
    return [value for value in values if isinstance(value, str)]


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _event() -> EventRow:
    headers = {"x-status": "completed" + BAD, "x-error": "boom" + BAD}
    return EventRow(
        at=T0,
        kind="notified",
        job_id="job" + BAD,
        root_id="root" + BAD,
        step="step" + BAD,
        attempt=1,
        body=b"\x00",
        meta={"queue": "q" + BAD, "reply_to": "r" + BAD, "headers": headers, BAD: BAD},
        msg_id="notice:job:r" + BAD,
    )


def test_every_text_of_an_event_row_is_storable_and_its_json_unchanged():
    row = _event()
    values = encode_event(row)

    assert all(_storable(text) for text in _texts(values)), values
    (back,) = [decode_event((1, *values))]
    assert back.meta == row.meta
    assert back.body == row.body
    assert (back.job_id, back.root_id, back.step) == ("job" + SAFE, "root" + SAFE, "step" + SAFE)
    # The sent mark names the row as it is stored.
    assert encode_sent(row.msg_id or "", 2.0) == (2.0, back.msg_id)


@pytest.mark.parametrize("encode", [encode_job, job_values], ids=["sqlite", "postgresql"])
def test_every_text_of_a_job_row_is_storable_and_its_json_unchanged(encode):
    row = job(
        "job" + BAD,
        root_id="root" + BAD,
        parent_id="parent" + BAD,
        workflow="wf" + BAD,
        payload={"text": "payload" + BAD, BAD: [BAD]},
        result={"out": BAD},
        error={"step": "s" + BAD, "error": "worker said" + BAD},
        snapshot={"steps": {"s" + BAD: {"output": BAD}}},
    )
    values = encode(row)

    assert all(_storable(text) for text in _texts(values)), values
    back = decode_job(values[:13])
    assert (back.payload, back.result, back.error, back.snapshot) == (
        row.payload,
        row.result,
        row.error,
        row.snapshot,
    )
    assert back.id == storable_text(row.id) == "job" + SAFE


def test_query_parameters_are_made_storable_as_the_rows_were():
    assert storable_params(["j\x00", 3, None, ["a\ud800", 4]]) == (
        "j\ufffd",
        3,
        None,
        ["a\ufffd", 4],
    )
