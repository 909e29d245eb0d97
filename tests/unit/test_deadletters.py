"""Dead letters without a broker: reading their headers, and showing them as a table and JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from workflow_manager.cli import build_parser
from workflow_manager.letters import DeadLetter, dead_at, describe_headers, format_dead_letters

X_DEATH = [
    {"count": 2, "reason": b"expired", "queue": b"later", "exchange": ""},
    {"count": 1, "reason": "rejected", "queue": "first", "exchange": ""},
]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (None, ({}, None, None, None)),
        ({"workflow": "w"}, ({"workflow": "w"}, None, None, None)),
        (
            {"x-dead-reason": "bad json", "x-dead-from": "wm.jobs", "workflow": "w"},
            ({"workflow": "w"}, "bad json", "wm.jobs", None),
        ),
        (  # AMQP clients may send header strings as bytes
            {"x-dead-reason": b"why", "x-dead-from": b"wm"},
            ({}, "why", "wm", None),
        ),
        (  # dead-lettered by a RabbitMQ policy: the newest x-death entry comes first
            {"x-death": X_DEATH, "x-first-death-queue": "first", "x-attempt": 1},
            ({"x-attempt": 1}, "dead-lettered by RabbitMQ: expired", "later", 3),
        ),
        (  # the manager's own headers win over RabbitMQ's
            {"x-dead-reason": "ours", "x-dead-from": "q", "x-death": X_DEATH},
            ({}, "ours", "q", 3),
        ),
        (  # RabbitMQ 3.13+ also sets x-last-death-*; its counters are not replayed
            {"x-last-death-reason": "delivery_limit", "x-last-death-queue": "s"}
            | {"x-delivery-count": 2},
            ({}, "dead-lettered by RabbitMQ: delivery_limit", "s", None),
        ),
    ],
)
def test_describe_headers(headers, expected):
    assert describe_headers(headers) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"x-dead-at": 1700000000.5}, 1700000000.5),
        ({"x-dead-at": Decimal("1700000000.25")}, 1700000000.25),
        ({"x-dead-at": "yesterday"}, None),
        ({"x-dead-at": True}, None),
        (  # dead-lettered by RabbitMQ: the newest x-death entry's time
            {"x-death": [{"time": datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)}, {}]},
            1700000000.0,
        ),
        ({"x-death": [{"time": "noon"}]}, None),
    ],
)
def test_dead_at_says_when_a_letter_became_dead(headers, expected):
    assert dead_at(headers) == expected


def test_the_dead_at_header_is_not_one_of_the_letters_own():
    own, *_ = describe_headers({"x-dead-at": 1.0, "x-dead-reason": "r", "k": "v"})
    assert own == {"k": "v"}


def _letter(**overrides) -> DeadLetter:
    fields = {
        "reason": "unknown workflow 'nope' (known: one)",
        "source_queue": "wm.jobs",
        "correlation_id": "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10",
        "reply_to": "answers",
        "headers": {"workflow": "nope"},
        "body": b'{"n": 1}',
    }
    return DeadLetter(**(fields | overrides))


def test_table_has_a_header_and_one_aligned_line_per_letter():
    second = _letter(source_queue="wm", correlation_id="x:y", id="9c1e4b7a02d35f68")
    table = format_dead_letters([_letter(id="0123456789abcdef"), second])
    lines = table.splitlines()
    assert len(lines) == 3
    assert lines[0].split() == ["ID", "REASON", "FROM", "CORRELATION", "ID", "BODY"]
    assert lines[2].startswith("9c1e4b7a02d35f68  unknown")
    first = "0123456789abcdef  unknown workflow 'nope' (known: one)  wm.jobs  3f2a0c4e-"
    assert lines[1].startswith(first)
    assert lines[1].endswith('{"n": 1}') and lines[2].endswith('{"n": 1}')
    assert lines[1].index("wm.jobs") == lines[2].index("wm ") == lines[0].index("FROM")


def test_table_keeps_one_line_per_letter_whatever_the_content():
    letters = [
        _letter(reason="r" * 200, body=b"a\nb\tc" + b"z" * 200),
        _letter(reason=None, source_queue=None, correlation_id=None, body=b"\xff\xfe"),
    ]
    first, second = format_dead_letters(letters).splitlines()[1:]
    assert "r" * 59 + "…" in first and "r" * 60 not in first
    assert "a\\nb\\tc" in first and first.endswith("…")
    assert second.split()[:4] == ["-", "-", "-", "-"] and second.endswith("<2 bytes, not UTF-8>")


def test_no_letters_is_an_empty_table():
    assert format_dead_letters([]) == ""


def test_json_gives_text_bodies_as_text_and_others_in_base64():
    as_json = _letter().to_json()
    assert as_json["body"] == '{"n": 1}' and "body_base64" not in as_json
    assert as_json["source_queue"] == "wm.jobs" and as_json["reply_to"] == "answers"
    binary = _letter(body=b"\xff\x00").to_json()
    assert binary["body_base64"] == "/wA=" and "body" not in binary


def test_json_turns_every_amqp_header_value_into_json():
    at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    headers = {"b": b"bytes", "t": at, "d": Decimal("1.50"), "n": [{"x": b"y"}], "ok": True}
    converted = _letter(headers=headers).to_json()["headers"]
    assert converted == {
        "b": "bytes",
        "t": "2024-05-01T12:00:00+00:00",
        "d": "1.50",
        "n": [{"x": "y"}],
        "ok": True,
    }
    json.dumps(converted)


def test_repr_is_one_short_line():
    assert repr(_letter(reason="a\nb", correlation_id="j:s", source_queue="q")) == (
        "<DeadLetter j:s from q: 'a\\nb'>"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["list"], {"dead_command": "list", "limit": 100, "json": False, "queue": "wm"}),
        (["list", "--limit", "5", "--json"], {"limit": 5, "json": True}),
        (["replay", "--all"], {"dead_command": "replay", "all": True, "correlation_id": None}),
        (["replay", "--id", "j:s", "--queue", "q"], {"correlation_id": "j:s", "queue": "q"}),
    ],
)
def test_cli_arguments(argv, expected):
    args = build_parser({"WM_QUEUE": "wm"}).parse_args(["dead-letters", *argv])
    assert {key: getattr(args, key) for key in expected} == expected


@pytest.mark.parametrize(
    "argv", [["replay"], ["replay", "--all", "--id", "j:s"], ["list", "--limit", "x"], []]
)
def test_cli_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser({}).parse_args(["dead-letters", *argv])
    assert exit_info.value.code == 2
