"""format_events: one aligned line per journal row, for `workflow-manager journal JOB_ID`."""

from __future__ import annotations

from workflow_manager.journal import EventRow
from workflow_manager.journal.inspect import BODY_PREVIEW_CHARS, format_events

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
JOB = "3f2a9c1e-0000-4000-8000-000000000001"


def test_each_row_is_one_line_with_its_columns():
    rows = [
        EventRow(at=T0, kind="submitted", job_id=JOB, root_id=JOB, body=b'{"text": "hi"}', seq=7),
        EventRow(
            at=T0 + 1.5,
            kind="dispatched",
            job_id=JOB,
            step="count",
            attempt=2,
            msg_id="abcdef0123456789",
            seq=12,
        ),
        EventRow(
            at=T0 + 2,
            kind="notified",
            job_id=JOB,
            msg_id="n1",
            sent_at=T0 + 3,
            meta={"reply_to": "q", "a": 1},
            seq=130,
        ),
    ]

    lines = format_events(rows).split("\n")

    assert lines == [
        "  7  2023-11-14T22:13:20.000Z  submitted   3f2a9c1e  -        -                     "
        '{"text": "hi"}',
        " 12  2023-11-14T22:13:21.500Z  dispatched  3f2a9c1e  count#2  msg=abcdef01 PENDING  -",
        "130  2023-11-14T22:13:22.000Z  notified    3f2a9c1e  -        msg=n1 sent           -  "
        '{"a":1,"reply_to":"q"}',
    ]


def test_long_bodies_are_cut_and_kept_on_one_line():
    body = ("line one\nline\ttwo\r\n" + "x" * 500).encode()
    (line,) = format_events([EventRow(at=T0, kind="replied", body=body, seq=1)]).split("\n")

    preview = line.split("  ")[-1]
    assert preview.startswith("line one\\nline\\ttwo\\r\\nxxx")
    assert len(preview) == BODY_PREVIEW_CHARS
    assert preview.endswith("…")


def test_binary_bodies_show_their_size():
    line = format_events([EventRow(at=T0, kind="replied", body=b"\xff\xfe\x00", seq=1)])
    assert line.endswith("<3 bytes, not UTF-8>")


def test_no_rows_no_text():
    assert format_events([]) == ""
